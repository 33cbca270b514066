"""Run events: stream_events, listeners, emit(), and closing a stream early."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from graph_agent import END, START, Command, KeyStrategy, StateGraph, interrupt
from graph_agent.events import (
    CheckpointEvent,
    CustomEvent,
    InterruptEvent,
    NodeEnd,
    NodeError,
    NodeStart,
    RunEnd,
    RunError,
    RunEvent,
    RunStart,
    emit,
)


def _pipeline(n: int = 3, hold: threading.Event | None = None) -> StateGraph:
    """``n`` nodes in a line; with ``hold``, each but the first waits for it (the test sets
    it as it closes the stream: the run is still going then)."""
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    for i in range(n):

        def node(state: Any, i: int = i) -> dict[str, Any]:
            emit({"at": i})
            if hold is not None and i > 0:
                assert hold.wait(10)
            return {"log": [i]}

        graph.add_node(f"n{i}", node)
    graph.add_edge(START, "n0")
    for i in range(n - 1):
        graph.add_edge(f"n{i}", f"n{i + 1}")
    return graph.add_edge(f"n{n - 1}", END)


def test_stream_events_yields_every_kind_in_order(saver):
    app = _pipeline(2).compile(saver=saver)
    events = list(app.stream_events({"log": []}, {"thread_id": "ev"}))
    kinds = [e.kind for e in events]
    assert kinds == [
        "run_start", "checkpoint",  # the input
        "node_start", "custom", "node_end", "checkpoint",
        "node_start", "custom", "node_end", "checkpoint",
        "run_end",
    ]  # fmt: skip
    assert all(isinstance(e, RunEvent) and e.thread_id == "ev" for e in events)
    assert len({e.run_id for e in events}) == 1
    start = events[0]
    assert isinstance(start, RunStart) and start.input == {"log": []}
    node_ends = [e for e in events if isinstance(e, NodeEnd)]
    assert [(e.node, e.update) for e in node_ends] == [("n0", {"log": [0]}), ("n1", {"log": [1]})]
    assert all(e.task_id for e in node_ends) and node_ends[0].task_id != node_ends[1].task_id
    assert [e.data for e in events if isinstance(e, CustomEvent)] == [{"at": 0}, {"at": 1}]
    checkpoints = [e for e in events if isinstance(e, CheckpointEvent)]
    assert checkpoints[-1].checkpoint_id == app.get_state({"thread_id": "ev"}).checkpoint_id
    end = events[-1]
    assert isinstance(end, RunEnd) and end.values == {"log": [0, 1]} and end.interrupts == ()


def test_astream_events():
    async def main() -> list[str]:
        return [e.kind async for e in _pipeline(1).compile().astream_events({"log": []})]

    assert asyncio.run(main()) == ["run_start", "node_start", "custom", "node_end", "run_end"]


def test_errors_and_interrupts_are_events(saver):
    graph = StateGraph()
    graph.add_node("ask", lambda s: {"a": interrupt("why?")}).add_edge(START, "ask")
    app = graph.add_edge("ask", END).compile(saver=saver)
    events = list(app.stream_events({}, {"thread_id": "i"}))
    (paused,) = [e for e in events if isinstance(e, InterruptEvent)]
    assert paused.interrupt.value == "why?" and paused.node is None
    assert events[-1].interrupts == (paused.interrupt,)
    resumed = list(app.stream_events(Command(resume="because"), {"thread_id": "i"}))
    assert resumed[-1].values == {"a": "because"}

    def boom(state: Any) -> None:
        raise ValueError("boom")

    failing = StateGraph().add_node("boom", boom).add_edge(START, "boom")
    failing = failing.add_edge("boom", END).compile()
    seen: list[RunEvent] = []
    with pytest.raises(ValueError, match="boom"):
        for event in failing.stream_events({}):
            seen.append(event)
    assert [e.kind for e in seen] == ["run_start", "node_start", "node_error", "run_error"]
    assert isinstance(seen[2], NodeError) and seen[2].attempt == 1
    assert isinstance(seen[3], RunError) and str(seen[3].error) == "boom"


class _Recorder:
    def __init__(self) -> None:
        self.kinds: list[str] = []

    def on_event(self, event: RunEvent) -> None:
        self.kinds.append(event.kind)


class _Broken:
    def on_event(self, event: RunEvent) -> None:
        raise RuntimeError("listener bug")


def test_listeners_see_every_run_and_a_broken_one_never_breaks_it(caplog):
    recorder = _Recorder()
    app = _pipeline(1).compile(listeners=[_Broken(), recorder])
    assert app.invoke({"log": []})["log"] == [0]
    assert asyncio.run(app.ainvoke({"log": []}))["log"] == [0]
    assert recorder.kinds == ["run_start", "node_start", "custom", "node_end", "run_end"] * 2
    assert "listener bug" in caplog.text or "failed on a run_start event" in caplog.text
    with pytest.raises(Exception, match="has no on_event"):
        _pipeline(1).compile(listeners=[object()])


def test_nobody_listening_emits_nothing():
    # without listeners or a stream the run has no bus: emit() is a no-op
    assert _pipeline(2).compile().invoke({"log": []})["log"] == [0, 1]


def test_closing_the_sync_stream_early_stops_the_run_at_the_next_step(saver):
    ran: list[int] = []
    closing = threading.Event()  # the nodes after n1 wait for it: the run goes on till then

    def node(state: Any, i: int) -> dict[str, Any]:
        ran.append(i)
        if i > 1:
            assert closing.wait(10)
        return {"log": [i]}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    for i in range(6):
        graph.add_node(f"n{i}", lambda s, i=i: node(s, i))
    graph.add_edge(START, "n0")
    for i in range(5):
        graph.add_edge(f"n{i}", f"n{i + 1}")
    app = graph.add_edge("n5", END).compile(saver=saver)
    config = {"thread_id": "stop"}
    threads = threading.active_count()
    stream = app.stream_events({"log": []}, config)
    for event in stream:
        if isinstance(event, NodeEnd) and event.node == "n1":
            break
    closing.set()
    stream.close()
    assert threading.active_count() == threads  # no run left behind
    assert len(ran) < 6
    snapshot = app.get_state(config)
    assert snapshot.next  # stopped between steps, resumable
    assert app.invoke(None, config)["log"] == [0, 1, 2, 3, 4, 5]


def test_closing_the_async_stream_early_stops_the_run(saver):
    closing = threading.Event()
    app = _pipeline(6, hold=closing).compile(saver=saver)
    config = {"thread_id": "astop"}

    async def main() -> None:
        stream = app.astream_events({"log": []}, config)
        async for event in stream:
            if isinstance(event, NodeStart):
                break
        closing.set()
        await stream.aclose()

    asyncio.run(main())
    assert app.get_state(config).next
    assert app.invoke(None, config)["log"] == list(range(6))


class _AsyncRecorder:
    def __init__(self) -> None:
        self.sync: list[str] = []
        self.kinds: list[str] = []

    def on_event(self, event: RunEvent) -> None:
        self.sync.append(event.kind)

    async def aon_event(self, event: RunEvent) -> None:
        await asyncio.sleep(0)
        self.kinds.append(event.kind)


def test_async_listeners_get_every_event_in_order_before_the_run_returns():
    recorder = _AsyncRecorder()
    app = _pipeline(3).compile(listeners=[recorder])
    asyncio.run(app.ainvoke({"log": []}))
    expected = ["run_start"] + ["node_start", "custom", "node_end"] * 3 + ["run_end"]
    assert recorder.kinds == expected and recorder.sync == []
    app.invoke({"log": []})  # a sync run uses on_event
    assert recorder.sync == expected


def test_closing_a_stream_also_stops_a_graph_with_listeners_run_from_a_node():
    class Quiet:
        def on_event(self, event: RunEvent) -> None:
            pass

    inner_steps: list[int] = []
    closing = threading.Event()  # the steps after s0 wait for it: the run goes on till then
    inner = StateGraph()
    for i in range(5):

        def step(state: Any, i: int = i) -> dict[str, Any]:
            if i > 0:
                assert closing.wait(10)
            inner_steps.append(i)
            return {"i": i}

        inner.add_node(f"s{i}", step)
    inner.add_edge(START, "s0")
    for i in range(4):
        inner.add_edge(f"s{i}", f"s{i + 1}")
    inner.add_edge("s4", END)
    nested = inner.compile(listeners=[Quiet()])
    outer = StateGraph()
    outer.add_node("call", lambda s: {"done": nested.invoke({})["i"]})
    outer.add_edge(START, "call").add_edge("call", END)
    stream = outer.compile().stream_events({})
    for event in stream:
        if event.kind == "node_end" and event.node == "s0":
            break
    closing.set()
    stream.close()  # the nested run's own bus hears the stop through its parent
    assert len(inner_steps) < 5


def test_events_are_frozen_dataclasses_built_by_keyword() -> None:
    import dataclasses
    import pickle

    end = RunEnd(run_id="r", thread_id="t")
    assert end.kind == "run_end" and end.values == {} and end.interrupts == ()
    other = RunEnd(run_id="r", thread_id="t")
    assert end == other and end.values is not other.values  # a fresh dict each
    with pytest.raises(dataclasses.FrozenInstanceError):
        end.run_id = "x"  # type: ignore[misc]
    moved = dataclasses.replace(end, run_id="z", node="n")
    assert (moved.run_id, moved.node, moved.kind) == ("z", "n", "run_end")
    assert pickle.loads(pickle.dumps(moved)) == moved
    assert [f.name for f in dataclasses.fields(NodeError)][-2:] == ["error", "attempt"]
    with pytest.raises(TypeError, match="run_id"):
        NodeStart(thread_id="t")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="bogus"):
        NodeStart(run_id="r", thread_id="t", bogus=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        NodeStart("r", "t")  # type: ignore[misc]
