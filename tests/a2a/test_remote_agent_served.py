"""A remote A2A agent's question reaches whoever talks to OUR server: an agent served over the
Agent Protocol calls a remote A2A agent as a tool; the remote's ``input-required`` is the
served run's interrupt, which the official ``langgraph-sdk`` client reads and answers (what
our page does), and the answer completes the same remote task."""

from __future__ import annotations

import json

from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall
from graph_agent.a2a import RemoteA2AAgent
from tests._needs import need_module

from ._remote_server import served

need_module("langgraph_sdk", "the dev extra: pip install -e '.[dev]' (make test)")

from langgraph_sdk import get_sync_client  # noqa: E402

from graph_agent.server import create_app  # noqa: E402


def test_a_remote_question_is_answered_over_our_server(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    call = ToolCall(id="call_1", name="travel", arguments=json.dumps({"input": "book a seat"}))
    model = ScriptedChatModel([AssistantMessage("", tool_calls=[call]), "Booked it for you."])
    agent = ReactAgent(name="assistant", model=model, tools=[remote.as_tool()])
    app = create_app({"assistant": agent})
    with served(lambda url: app) as base, get_sync_client(url=base) as client:
        thread = client.threads.create()["thread_id"]
        said = {"messages": [{"role": "user", "content": "book me a seat"}]}
        paused = client.runs.wait(thread, "assistant", input=said)
        assert isinstance(paused, dict)
        (pause,) = paused["__interrupt__"]
        assert pause["value"]["question"] == "Which city?"
        assert client.threads.get(thread)["status"] == "interrupted"
        done = client.runs.wait(thread, "assistant", command={"resume": {pause["id"]: "Quito"}})
        assert isinstance(done, dict)
        tool_answer, answer = done["messages"][-2:]
        assert tool_answer["content"] == f"Booked for Quito (task {pause['value']['task_id']})"
        assert answer["content"] == "Booked it for you."
        assert client.threads.get(thread)["status"] == "idle"


def test_the_remote_s_streamed_answer_and_events_reach_our_server_s_stream(
    remote_url: str,
) -> None:
    """Served itself, the remote agent streams through our server: its answer's pieces as
    message chunks, its task's events as custom events."""
    app = create_app({"travel": RemoteA2AAgent(remote_url)})
    with served(lambda url: app) as base, get_sync_client(url=base) as client:
        thread = client.threads.create()["thread_id"]
        said = {"messages": [{"role": "user", "content": "hello"}]}
        parts = list(
            client.runs.stream(
                thread, "travel", input=said, stream_mode=["messages-tuple", "custom"]
            )
        )
    chunks = [p.data[0]["content"] for p in parts if p.event == "messages"]
    assert chunks == ["Echo: ", "hello (turn 1)"]
    states = [
        p.data["a2a"]["state"] for p in parts if p.event == "custom" and "state" in p.data["a2a"]
    ]
    assert states == ["submitted", "working", "completed"]
