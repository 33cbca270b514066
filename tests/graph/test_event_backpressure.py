"""A slow reader of an event stream holds the run back: the run never gets more than
``EVENTS_AHEAD`` events (and the few it emits between two awaits) ahead of it, sync or
async, whether the events come from the run's task on the loop or from a worker thread; no
event is lost or reordered, and the loop is never blocked."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import END, START, KeyStrategy, ReactAgent, StateGraph
from graph_agent.events import CustomEvent, RunEvent, emit
from graph_agent.graph._streams import EVENTS_AHEAD
from graph_agent.models import ScriptedChatModel

N = 3 * EVENTS_AHEAD  # events each producer emits
SLACK = 8  # what a run may emit between two of its awaits (a node's end, the next start)


class Counter:
    """Counts the events the run has emitted (a listener gets each before the stream does)."""

    def __init__(self) -> None:
        self.emitted = 0

    def on_event(self, event: RunEvent) -> None:
        self.emitted += 1


class Reader:
    """Reads a stream slowly: after the first event it stops for a while (the run could race
    through everything then), then reads on, pausing now and then."""

    def __init__(self, counter: Counter) -> None:
        self.counter = counter
        self.read = 0
        self.most_ahead = 0
        self.data: list[Any] = []

    def saw(self, event: RunEvent) -> bool:
        """Note ``event``; whether to pause now."""
        self.read += 1
        self.most_ahead = max(self.most_ahead, self.counter.emitted - self.read)
        if isinstance(event, CustomEvent):
            self.data.append(event.data)
        return self.read == 1 or self.read % 500 == 0

    def pause(self) -> float:
        return 0.2 if self.read == 1 else 0.02

    def sync(self, events: Iterator[RunEvent]) -> None:
        for event in events:
            if self.saw(event):
                time.sleep(self.pause())

    async def aread(self, events: AsyncIterator[RunEvent]) -> None:
        async for event in events:
            if self.saw(event):
                await asyncio.sleep(self.pause())


def _async_nodes() -> StateGraph:
    async def produce(state: Any, name: str) -> dict[str, Any]:
        for i in range(N):
            emit((name, i))
            await asyncio.sleep(0)
        return {name: True}

    async def first(state: Any) -> dict[str, Any]:
        return await produce(state, "first")

    async def second(state: Any) -> dict[str, Any]:
        return await produce(state, "second")

    graph = StateGraph().add_node("first", first).add_node("second", second)
    return graph.add_edge(START, "first").add_edge("first", "second").add_edge("second", END)


def _sync_node() -> StateGraph:
    def produce(state: Any) -> dict[str, Any]:
        for i in range(N):
            emit(("sync", i))  # no await anywhere: a worker thread's run of emits
        return {"sync": True}

    graph = StateGraph().add_node("produce", produce)
    return graph.add_edge(START, "produce").add_edge("produce", END)


def _expected(graph: str) -> list[Any]:
    if graph == "async":
        return [("first", i) for i in range(N)] + [("second", i) for i in range(N)]
    return [("sync", i) for i in range(N)]


@pytest.mark.parametrize("graph", ["async", "sync"], ids=["async-nodes", "sync-node-in-a-thread"])
def test_a_slow_async_reader_holds_the_run_back(graph: str) -> None:
    counter = Counter()
    app = (_async_nodes() if graph == "async" else _sync_node()).compile(listeners=[counter])
    reader = Reader(counter)
    ticks = 0

    async def main() -> None:
        nonlocal ticks

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        ticker = asyncio.ensure_future(tick())
        try:
            await reader.aread(app.astream_events({}))
        finally:
            ticker.cancel()

    asyncio.run(main())
    assert reader.data == _expected(graph)  # nothing lost, nothing out of order
    assert reader.read == counter.emitted
    assert EVENTS_AHEAD - SLACK <= reader.most_ahead <= EVENTS_AHEAD + SLACK
    assert ticks > 50  # the loop went on while the run waited for its reader


def test_a_slow_sync_reader_holds_the_run_back() -> None:
    counter = Counter()
    app = _sync_node().compile(listeners=[counter])
    reader = Reader(counter)
    reader.sync(app.stream_events({}))
    assert reader.data == _expected("sync")
    assert EVENTS_AHEAD <= reader.most_ahead <= EVENTS_AHEAD + 1


def test_a_slow_reader_holds_an_agents_model_stream_back() -> None:
    counter = Counter()
    words = [f"w{i}" for i in range(N)]
    model = ScriptedChatModel([" ".join(words)])
    agent = ReactAgent(name="talker", model=model, listeners=[counter])
    reader = Reader(counter)

    async def main() -> list[str]:
        texts: list[str] = []

        async def events() -> AsyncIterator[RunEvent]:
            async for event in agent.astream_events("Talk."):
                if event.kind == "model_delta":
                    texts.append(getattr(event, "text", ""))
                yield event

        await reader.aread(events())
        return texts

    assert "".join(asyncio.run(main())).split(" ") == words
    assert EVENTS_AHEAD - SLACK <= reader.most_ahead <= EVENTS_AHEAD + SLACK


def test_a_sync_run_that_blocks_the_loop_is_not_held_back_forever() -> None:
    """An async node that runs a graph synchronously blocks the loop's thread until that run
    ends; the inner run's parallel nodes emit from worker threads, and nobody can read until
    the loop runs again: they stop waiting for the reader instead of waiting forever."""

    def chatty(name: str) -> Any:
        def node(state: Any) -> dict[str, Any]:
            for i in range(N):
                emit((name, i))
            return {}

        return node

    inner = StateGraph()
    for name in ("left", "right"):
        inner.add_node(name, chatty(name)).add_edge(START, name).add_edge(name, END)
    nested = inner.compile()

    async def outer_node(state: Any) -> dict[str, Any]:
        nested.invoke({})  # blocks the loop: not good async code, but it must not hang
        return {"done": True}

    outer = StateGraph().add_node("outer", outer_node)
    app = outer.add_edge(START, "outer").add_edge("outer", END).compile()
    seen: list[Any] = []

    async def main() -> None:
        async for event in app.astream_events({}):
            if isinstance(event, CustomEvent):
                seen.append(event.data)

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "the run hung"
    assert sorted(seen) == sorted([(n, i) for n in ("left", "right") for i in range(N)])
    for name in ("left", "right"):
        assert [d for d in seen if d[0] == name] == [(name, i) for i in range(N)]


def _steps(is_async: bool) -> StateGraph:
    """Three steps, each emitting ``N`` events: async nodes, or sync ones (worker threads)."""
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    for step in range(3):
        if is_async:

            async def node(state: Any, step: int = step) -> dict[str, Any]:
                for i in range(N):
                    emit((step, i))
                    await asyncio.sleep(0)
                return {"log": [step]}

        else:

            def node(state: Any, step: int = step) -> dict[str, Any]:  # type: ignore[misc]
                for i in range(N):
                    emit((step, i))
                return {"log": [step]}

        graph.add_node(f"s{step}", node)
    graph.add_edge(START, "s0").add_edge("s0", "s1").add_edge("s1", "s2")
    return graph.add_edge("s2", END)


@pytest.mark.parametrize("is_async", [True, False], ids=["async-nodes", "sync-nodes"])
def test_closing_a_stream_whose_run_is_held_back_stops_the_run(is_async: bool) -> None:
    app = _steps(is_async).compile(saver=MemorySaver())
    config = {"thread_id": "held"}

    async def main() -> None:
        stream = app.astream_events({"log": []}, config)
        read = 0
        async for _ in stream:
            read += 1
            if read == 5:
                await asyncio.sleep(0.1)  # the run fills the stream and waits
                break
        await stream.aclose()  # the run goes on to its next step boundary, and stops there

    asyncio.run(asyncio.wait_for(main(), 30))
    assert app.get_state(config).next == ("s1",)
    assert asyncio.run(app.ainvoke(None, config))["log"] == [0, 1, 2]


@pytest.mark.parametrize("is_async", [True, False], ids=["async-nodes", "sync-nodes"])
def test_cancelling_the_reader_of_a_held_back_run_stops_the_run(is_async: bool) -> None:
    app = _steps(is_async).compile(saver=MemorySaver())
    config = {"thread_id": "cancelled"}

    async def read() -> None:
        async with contextlib.aclosing(app.astream_events({"log": []}, config)) as events:
            async for _ in events:
                await asyncio.sleep(0.01)

    async def main() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(read(), 0.2)

    asyncio.run(asyncio.wait_for(main(), 30))
    assert app.get_state(config).next == ("s1",)
    assert asyncio.run(app.ainvoke(None, config))["log"] == [0, 1, 2]


@pytest.mark.parametrize("is_async", [True, False], ids=["async-node", "sync-node"])
def test_an_error_after_the_run_was_held_back_reaches_the_reader(is_async: bool) -> None:
    async def async_fail(state: Any) -> dict[str, Any]:
        for i in range(N):
            emit(i)
            await asyncio.sleep(0)
        raise ValueError("late")

    def sync_fail(state: Any) -> dict[str, Any]:
        for i in range(N):
            emit(i)
        raise ValueError("late")

    graph = StateGraph().add_node("fail", async_fail if is_async else sync_fail)
    app = graph.add_edge(START, "fail").add_edge("fail", END).compile()
    data: list[Any] = []

    async def main() -> None:
        async for event in app.astream_events({}):
            if isinstance(event, CustomEvent):
                data.append(event.data)
            if len(data) == 1:
                await asyncio.sleep(0.1)

    with pytest.raises(ValueError, match="late"):
        asyncio.run(main())
    assert data == list(range(N))


def test_parallel_async_nodes_of_one_step_are_held_back_too() -> None:
    """Two async nodes in one step run as tasks of their own: each waits for the reader."""

    async def produce(name: str) -> dict[str, Any]:
        for i in range(N):
            emit((name, i))
            await asyncio.sleep(0)
        return {name: True}

    async def left(state: Any) -> dict[str, Any]:
        return await produce("left")

    async def right(state: Any) -> dict[str, Any]:
        return await produce("right")

    graph = StateGraph().add_node("left", left).add_node("right", right)
    graph.add_edge(START, "left").add_edge(START, "right").add_edge(["left", "right"], END)
    counter = Counter()
    app = graph.compile(listeners=[counter])
    reader = Reader(counter)
    asyncio.run(reader.aread(app.astream_events({})))
    assert sorted(d for d in reader.data if d[0] == "left") == [("left", i) for i in range(N)]
    assert len(reader.data) == 2 * N
    assert reader.most_ahead <= EVENTS_AHEAD + 2 * SLACK  # each task waits at its awaits


def test_an_agents_parallel_async_tool_calls_are_held_back_too() -> None:
    from graph_agent import AssistantMessage, ToolCall, tool

    @tool
    async def produce(name: str) -> str:
        """Emits N events."""
        for i in range(N):
            emit((name, i))
            await asyncio.sleep(0)
        return "done"

    calls = [ToolCall(id=f"c{n}", name="produce", arguments=f'{{"name": "{n}"}}') for n in "ab"]
    counter = Counter()
    agent = ReactAgent(
        name="a",
        model=ScriptedChatModel([AssistantMessage("", tool_calls=calls), "ok"]),
        tools=[produce],
        listeners=[counter],
    )
    reader = Reader(counter)
    asyncio.run(reader.aread(agent.astream_events("go", {"thread_id": "paced"})))
    assert len(reader.data) == 2 * N
    assert reader.most_ahead <= EVENTS_AHEAD + 2 * SLACK
