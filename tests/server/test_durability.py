"""What a run promises when its server dies or its client cancels it:

- langgraph #8764: a run the server accepted is not lost when the process is killed before
  the run's first checkpoint. Ours records the run and answers ``runs.create`` only once
  the run's input is stored, so when a ``graph-agent serve`` is killed with SIGKILL right
  after, the next server process on the same file takes the run up and finishes it;
- langgraph #5672: cancelling a run loses nothing it streamed. A cancelled run stops at once
  and stores what it had: the answer streamed so far (marked cut), the parallel tool call
  that finished, every other call answered as cancelled; the stream ends on the stored state.
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from pathlib import Path
from typing import Any

from langgraph_sdk import get_sync_client

from checkpoint import MemorySaver
from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall, tool
from graph_agent.agent._unanswered import CANCELLED_TEXT
from graph_agent.server import create_app
from tests.redis_servers import free_port

from .conftest import live_server, serve_process, stop_process

SERVED = """
import os, time
from graph_agent import AssistantMessage, FunctionChatModel, ReactAgent, ToolCall, tool
from graph_agent import ToolResponseMessage

@tool
def archive(note: str) -> str:
    \"\"\"Archive a note (slowly, in the first server process).\"\"\"
    if os.environ.get("ARCHIVE_HANGS"):
        time.sleep(120)
    return f"archived {note}"

def reply(prompt):  # the same answer in every process: it reads the conversation
    if isinstance(prompt.messages[-1], ToolResponseMessage):
        return "Archived."
    return AssistantMessage(
        "", tool_calls=[ToolCall(id="call_1", name="archive", arguments='{"note": "n1"}')]
    )

agent = ReactAgent(name="keeper", model=FunctionChatModel(reply), tools=[archive])
"""


def test_an_accepted_run_survives_its_server_killed_before_it_ends(tmp_path: Path) -> None:
    module, db = tmp_path / "served.py", tmp_path / "threads.sqlite"
    module.write_text(SERVED)
    port = free_port()
    first = serve_process(module, db, port, ARCHIVE_HANGS="1")
    try:
        with get_sync_client(url=f"http://127.0.0.1:{port}") as client:
            thread = client.threads.create()
            run = client.runs.create(
                thread["thread_id"],
                "keeper",
                input={"messages": [{"role": "user", "content": "keep this"}]},
            )
            assert run["status"] in ("pending", "running")
    finally:
        stop_process(first, signal.SIGKILL)  # at once: the run is in its first steps, or waiting
    second = serve_process(module, db, port)
    try:  # the next server takes the run up, from its thread's last checkpoint
        with get_sync_client(url=f"http://127.0.0.1:{port}") as client:
            done = client.runs.join(thread["thread_id"], run["run_id"])
            finished = client.runs.get(thread["thread_id"], run["run_id"])
    finally:
        stop_process(second)
    assert finished["status"] == "success"
    assert isinstance(done, dict)
    assert [m["type"] for m in done["messages"]] == ["human", "ai", "tool", "ai"]
    assert done["messages"][0]["content"] == "keep this"
    assert done["messages"][2]["content"] == "archived n1"  # the tool ran, once it could
    assert done["messages"][-1]["content"] == "Archived."


def test_a_cancelled_run_keeps_everything_it_streamed() -> None:
    slow_started, cancelled = threading.Event(), threading.Event()

    @tool
    async def quick(q: str) -> str:
        """Answers at once."""
        return "quick result"

    @tool
    async def slow(q: str) -> str:
        """Runs until the run is cancelled."""
        slow_started.set()
        await asyncio.to_thread(cancelled.wait, 10)
        return "slow result"

    both = AssistantMessage(
        "Let me check both.",
        tool_calls=[
            ToolCall(id="c1", name="quick", arguments=json.dumps({"q": "a"})),
            ToolCall(id="c2", name="slow", arguments=json.dumps({"q": "b"})),
        ],
    )
    agent = ReactAgent(
        name="two",
        model=ScriptedChatModel([both, "Both checked."]),
        tools=[quick, slow],
        saver=MemorySaver(),
    )
    with live_server(create_app({"two": agent})) as url, get_sync_client(url=url) as client:
        thread = client.threads.create()
        run = client.runs.create(
            thread["thread_id"],
            "two",
            input={"messages": [{"role": "user", "content": "go"}]},
            stream_mode=["values", "messages-tuple"],
        )
        assert slow_started.wait(10)
        client.runs.cancel(thread["thread_id"], run["run_id"])  # answered once it is asked
        cancelled.set()
        client.runs.join(thread["thread_id"], run["run_id"])
        assert client.runs.get(thread["thread_id"], run["run_id"])["status"] == "interrupted"
        streamed = list(client.runs.join_stream(thread["thread_id"], run["run_id"]))
        state = client.threads.get_state(thread["thread_id"])
    stored: list[dict[str, Any]] = state["values"]["messages"]
    text = "".join(
        p.data[0]["content"]
        for p in streamed
        if p.event == "messages" and p.data[0]["type"] == "AIMessageChunk"
    )
    assert text == "Let me check both."
    assert stored[1]["content"] == text  # what the client saw is stored
    results = {m["tool_call_id"]: m["content"] for m in stored if m["type"] == "tool"}
    # the finished call's result is kept; the one still running was cancelled at once
    assert results == {"c1": "quick result", "c2": CANCELLED_TEXT}
    last_values = [p.data for p in streamed if p.event == "values"][-1]
    assert last_values["messages"] == stored  # the stream ends on what was stored
    assert state["next"] == ["model"]  # and the thread goes on from there
