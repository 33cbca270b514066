"""``RemoteA2AAgent`` against a real A2A agent (a2a-sdk's server side, under uvicorn): called
on a thread and as a tool of a ``ReactAgent``, sync and async; its answer streamed into our
run events; a follow-up on the same thread continuing the same remote conversation."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall
from graph_agent.a2a import RemoteA2AAgent
from graph_agent.events import CustomEvent, ModelDelta, ToolEnd

from ._remote_server import remote_agent


def asks(input: str, call_id: str = "call_1", tool: str = "travel") -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=[ToolCall(id=call_id, name=tool, arguments=json.dumps({"input": input}))]
    )


def assistant(remote: RemoteA2AAgent, *script: Any) -> ReactAgent:
    return ReactAgent(
        name="assistant", model=ScriptedChatModel(list(script)), tools=[remote.as_tool()]
    )


def tool_results(events: list[Any]) -> list[str | None]:
    return [e.result for e in events if isinstance(e, ToolEnd)]


def test_the_card_names_the_agent_and_its_tool(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    assert remote.name == "travel"
    assert remote.description == "Books flights and answers travel questions."
    definition = remote.as_tool().tool_definition
    assert (definition.name, definition.description) == ("travel", remote.description)
    assert RemoteA2AAgent(remote_url, name="trips").as_tool().tool_definition.name == "trips"


def test_a_call_on_a_thread_answers_and_a_follow_up_continues_the_remote_context(
    remote_url: str,
) -> None:
    remote = RemoteA2AAgent(remote_url)
    thread = {"thread_id": "t1"}
    assert remote.call("hello", thread).text == "Echo: hello (turn 1)"
    assert remote.call("again", thread).text == "Echo: again (turn 2)"
    assert remote.call("elsewhere").text == "Echo: elsewhere (turn 1)"  # a fresh thread


def test_as_a_tool_the_answer_comes_back_and_a_follow_up_keeps_the_context(
    remote_url: str,
) -> None:
    remote = RemoteA2AAgent(remote_url)
    script = [
        asks("hello"),
        "Done.",
        asks("again", "call_2"),
        "Done.",
        asks("hi", "call_3"),
        "Done.",
    ]
    agent = assistant(remote, *script)
    thread = {"thread_id": "caller"}
    first = list(agent.stream_events("say hello to travel", thread))
    assert tool_results(first) == ["Echo: hello (turn 1)"]
    second = list(agent.stream_events("once more", thread))
    assert tool_results(second) == ["Echo: again (turn 2)"]
    other = list(agent.stream_events("hi", {"thread_id": "other"}))
    assert tool_results(other) == ["Echo: hi (turn 1)"]  # another thread, another context


def test_async_as_a_tool_and_on_a_thread(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    agent = assistant(remote, asks("hi"), "Done.", asks("hi again", "call_2"), "Done.")

    async def main() -> tuple[list[str | None], str]:
        thread = {"thread_id": "async"}
        results = []
        for text in ("one", "two"):
            events = [e async for e in agent.astream_events(text, thread)]
            results += tool_results(events)
        direct = await remote.acall("direct")
        return results, direct.text

    results, direct = asyncio.run(main())
    assert results == ["Echo: hi (turn 1)", "Echo: hi again (turn 2)"]
    assert direct == "Echo: direct (turn 1)"


def test_the_streamed_answer_is_in_our_run_events(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    events = list(remote.stream_events("hello"))
    deltas = [e.text for e in events if isinstance(e, ModelDelta)]
    assert deltas == ["Echo: ", "hello (turn 1)"]  # the remote's two artifact chunks
    assert {e.model for e in events if isinstance(e, ModelDelta)} == {"a2a:travel"}
    states = [
        e.data["a2a"]["state"]
        for e in events
        if isinstance(e, CustomEvent) and e.data["a2a"]["event"] == "status"
    ]
    assert states == ["submitted", "working", "completed"]
    assert "".join(remote.stream_messages("hello")) == "Echo: hello (turn 1)"


def test_inside_a_tool_call_the_remote_s_events_nest_under_the_call(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    agent = assistant(remote, asks("hello"), "Done.")
    events = list(agent.stream_events("go"))
    deltas = [e for e in events if isinstance(e, ModelDelta) and e.model == "a2a:travel"]
    assert [e.text for e in deltas] == ["Echo: ", "hello (turn 1)"]
    assert all(len(e.namespace) == 1 and e.namespace[0].startswith("travel:") for e in deltas)


def test_a_remote_that_does_not_stream_answers_all_the_same() -> None:
    with remote_agent(streaming=False) as url:
        remote = RemoteA2AAgent(url)
        assert remote.call("hello").text == "Echo: hello (turn 1)"
        assert "".join(remote.stream_messages("hi")) == "Echo: hi (turn 1)"


def test_two_remote_agents_called_at_once_each_keep_their_context(remote_url: str) -> None:
    one, two = RemoteA2AAgent(remote_url, name="one"), RemoteA2AAgent(remote_url, name="two")

    def both(turn: int) -> AssistantMessage:
        return AssistantMessage(
            "",
            tool_calls=[
                ToolCall(id=f"a{turn}", name="one", arguments=json.dumps({"input": "x"})),
                ToolCall(id=f"b{turn}", name="two", arguments=json.dumps({"input": "y"})),
            ],
        )

    model = ScriptedChatModel([both(1), "Done.", both(2), "Done."])
    agent = ReactAgent(name="caller", model=model, tools=[one.as_tool(), two.as_tool()])
    thread = {"thread_id": "both"}
    first = tool_results(list(agent.stream_events("go", thread)))
    second = tool_results(list(agent.stream_events("again", thread)))
    assert sorted(first) == ["Echo: x (turn 1)", "Echo: y (turn 1)"]
    assert sorted(second) == ["Echo: x (turn 2)", "Echo: y (turn 2)"]


def test_a_remote_that_answers_with_a_message_and_no_task(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    thread = {"thread_id": "quick"}
    assert remote.call("quick one", thread).text == "Quick: quick one"
    assert "".join(remote.stream_messages("quick two", thread)) == "Quick: quick two"
