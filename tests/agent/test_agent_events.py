"""An agent's run events: model and tool events, listeners, namespaces, and the message
stream as a view of them."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from graph_agent import ReactAgent, RunnableConfig, tool
from graph_agent.events import RunEvent
from graph_agent.models import FunctionChatModel, ScriptedChatModel

from .._stop import await_stopped, until_stopped
from .conftest import tool_calls


class CountingModel(ScriptedChatModel):
    """Counts plain calls and streams (sync or async)."""

    def __init__(self, responses: Any) -> None:
        super().__init__(responses)
        self.calls = 0
        self.streams = 0

    def call(self, prompt: Any) -> Any:
        self.calls += 1
        return super().call(prompt)

    async def acall(self, prompt: Any) -> Any:
        self.calls += 1
        return await super().acall(prompt)

    def stream(self, prompt: Any) -> Any:
        self.streams += 1
        return super().stream(prompt)

    def astream(self, prompt: Any) -> Any:
        self.streams += 1
        return super().astream(prompt)


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def _agent(**kw: Any) -> tuple[ReactAgent, CountingModel]:
    model = CountingModel([tool_calls(("weather", {"city": "Oslo"})), "It is sunny in Oslo."])
    return ReactAgent(name="w", model=model, tools=[weather], **kw), model


def _events(agent: ReactAgent, value: Any, config: Any, is_async: bool) -> list[RunEvent]:
    if not is_async:
        return list(agent.stream_events(value, config))

    async def collect() -> list[RunEvent]:
        return [e async for e in agent.astream_events(value, config)]

    return asyncio.run(collect())


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_an_agent_run_tells_every_step_in_order(is_async: bool) -> None:
    agent, model = _agent()
    events = _events(agent, "Weather in Oslo?", {"thread_id": "t"}, is_async)
    kinds = [e.kind for e in events if e.kind != "checkpoint"]
    deltas = [e.text for e in events if e.kind == "model_delta" and e.text]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    # model (tool call), tools, model (answer), each inside its node's start and end
    compact = [k for i, k in enumerate(kinds) if k != "model_delta" or kinds[i - 1] != k]
    assert compact == [
        "run_start",
        "node_start",
        "model_start",
        "model_delta",  # the tool call, as a fragment
        "model_end",
        "node_end",
        "node_start",
        "tool_start",
        "tool_end",
        "node_end",
        "node_start",
        "model_start",
        "model_delta",
        "model_end",
        "node_end",
        "run_end",
    ]
    assert "".join(deltas) == "It is sunny in Oslo."
    fragment = next(e for e in events if e.kind == "model_delta")
    assert fragment.tool_call_delta.name == "weather"
    end = next(e for e in events if e.kind == "tool_end")
    assert (end.name, end.result, end.error) == ("weather", "sunny in Oslo", None)
    model_end = [e for e in events if e.kind == "model_end"][-1]
    assert model_end.message.text == "It is sunny in Oslo." and model_end.model
    assert model.streams == 2 and model.calls == 0  # streamed because somebody reads
    task_ids = {e.task_id for e in events if e.kind in ("tool_start", "tool_end")}
    assert len(task_ids) == 1 and None not in task_ids
    assert all(e.namespace == () and e.thread_id == "t" for e in events)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_nobody_listening_means_plain_model_calls(is_async: bool) -> None:
    agent, model = _agent()
    if is_async:
        asyncio.run(agent.acall("Weather?", {"thread_id": "t"}))
    else:
        agent.call("Weather?", {"thread_id": "t"})
    assert model.calls == 2 and model.streams == 0


class Recorder:
    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    def on_event(self, event: RunEvent) -> None:
        self.events.append(event)


class Broken:
    def on_event(self, event: RunEvent) -> None:
        raise RuntimeError("listener bug")


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_builder_listeners_get_every_event_and_a_broken_one_breaks_nothing(
    is_async: bool, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder()
    model = CountingModel([tool_calls(("weather", {"city": "Oslo"})), "Sunny."])
    agent = (
        ReactAgent.builder()
        .name("w")
        .model(model)
        .tools(weather)
        .listeners(Broken(), recorder)
        .build()
    )
    if is_async:
        answer = asyncio.run(agent.acall("Weather?", {"thread_id": "t"}))
    else:
        answer = agent.call("Weather?", {"thread_id": "t"})
    assert answer.text == "Sunny."
    kinds = [e.kind for e in recorder.events]
    assert {"run_start", "model_start", "model_end", "tool_start", "tool_end", "run_end"} <= set(
        kinds
    )
    assert "model_delta" not in kinds  # a listener alone does not make the model stream
    assert "listener bug" in caplog.text or "failed on a" in caplog.text


def test_a_listener_without_on_event_is_a_build_error() -> None:
    from graph_agent import AgentBuildError

    with pytest.raises(AgentBuildError, match="has no on_event"):
        ReactAgent.builder().name("a").model(ScriptedChatModel([])).listeners(object()).build()


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_an_agent_called_from_a_tool_reports_under_the_calling_task(is_async: bool) -> None:
    inner = ReactAgent(name="expert", model=FunctionChatModel(lambda p: "inner words"))

    @tool
    def ask_expert(q: str) -> str:
        """Ask the expert."""
        return inner.call(q, {"thread_id": "inner"}).text

    ask = tool_calls(("ask_expert", {"q": "x"}))
    model = ScriptedChatModel([ask, "outer words", ask, "outer words"])
    outer = ReactAgent(name="outer", model=model, tools=[ask_expert])
    events = _events(outer, "go", {"thread_id": "outer"}, is_async)
    nested = [e for e in events if e.namespace]
    assert nested, "the inner agent's events reach the outer stream"
    tool_task = next(e.task_id for e in events if e.kind == "tool_start")
    assert {e.namespace for e in nested} == {(f"tools:{tool_task}",)}
    assert {e.thread_id for e in nested} == {"inner"}
    inner_text = "".join(e.text for e in nested if e.kind == "model_delta")
    assert inner_text == "inner words"  # the inner model streams too: somebody reads
    assert "".join(outer.stream_messages("go again", {"thread_id": "o2"})) == "outer words"


def test_stream_messages_is_the_text_of_the_agents_own_model_calls(run: Any) -> None:
    agent, _ = _agent()
    assert "".join(run.stream_messages(agent, "Weather?", {"thread_id": "t"})) == (
        "It is sunny in Oslo."
    )


def _slow_agent(saver: Any = None) -> ReactAgent:
    """Its tool runs until the run is asked to stop: the stream is closed while it runs."""

    @tool
    def slow(n: int) -> str:
        """Take a while."""
        until_stopped()
        return str(n)

    model = ScriptedChatModel([tool_calls(("slow", {"n": 1}), text="Checking"), "Done."])
    return ReactAgent(name="s", model=model, tools=[slow], **({"saver": saver} if saver else {}))


def test_closing_the_message_stream_stops_the_run_and_leaves_no_thread_running() -> None:
    agent = _slow_agent()
    config = RunnableConfig(thread_id="stop")
    before = threading.active_count()
    stream = agent.stream_messages("check", config)
    assert next(stream) == "Checking"
    stream.close()  # returns once the run reached a step boundary
    assert threading.active_count() <= before
    snapshot = agent.get_state(config)
    assert snapshot is not None and snapshot.next  # resumable, not finished
    answer = agent.call(None, config)
    assert answer.text == "Done."


def test_closing_the_async_message_stream_stops_the_run() -> None:
    agent = _slow_agent()
    config = RunnableConfig(thread_id="astop")

    async def first_piece() -> str:
        stream = agent.astream_messages("check", config)
        piece = await stream.__anext__()
        await stream.aclose()
        return piece

    assert asyncio.run(first_piece()) == "Checking"
    snapshot = agent.get_state(config)
    assert snapshot is not None and snapshot.next
    assert agent.call(None, config).text == "Done."


def test_closing_the_agents_async_event_stream_stops_its_run() -> None:
    ran: list[str] = []

    @tool
    async def later() -> str:
        """Still running when the stream is closed."""
        await await_stopped()
        ran.append("later")
        return "ran"

    agent = ReactAgent(
        name="a", model=ScriptedChatModel([tool_calls(("later", {}))]), tools=[later]
    )
    config = {"thread_id": "closed"}

    async def scenario() -> tuple[str, ...]:
        events = agent.astream_events("go", config)
        async for event in events:
            if event.kind == "tool_start":
                break
        await events.aclose()  # closes the graph's stream too: the run stops at its next step
        assert ran == ["later"]  # the running step finished before aclose() returned
        state = await agent.aget_state(config)
        return tuple(state.next)

    assert asyncio.run(scenario()) == ("model",)  # stopped there, resumable
