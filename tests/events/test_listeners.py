"""Listeners for the whole process (install_listener), and listeners that read only some kinds
of events (event_kinds)."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import END, START, StateGraph
from graph_agent.events import (
    CheckpointEvent,
    NodeStart,
    install_listener,
    installed_listeners,
    uninstall_listener,
)


class Recorder:
    def __init__(self, kinds: frozenset[str] | None = None) -> None:
        self.events: list[Any] = []
        if kinds is not None:
            self.event_kinds = kinds

    def on_event(self, event: Any) -> None:
        self.events.append(event)


def _graph(**compile_kw: Any) -> Any:
    graph = StateGraph()
    graph.add_node("a", lambda s: {"x": 1}).add_node("b", lambda s: {"y": 2})
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    return graph.compile(**compile_kw)


def test_an_installed_listener_gets_every_run_of_every_graph() -> None:
    recorder = Recorder()
    install_listener(recorder)
    install_listener(recorder)  # once is enough
    try:
        assert installed_listeners() == (recorder,)
        _graph().invoke({})
        _graph(name="second").invoke({})
    finally:
        assert uninstall_listener(recorder) is True
    starts = [e for e in recorder.events if e.kind == "run_start"]
    assert [(e.graph, e.agent) for e in starts] == [("graph", False), ("second", False)]
    _graph().invoke({})
    assert len([e for e in recorder.events if e.kind == "run_start"]) == 2  # uninstalled
    assert uninstall_listener(recorder) is False


def test_installing_what_is_not_a_listener_says_so() -> None:
    with pytest.raises(TypeError, match="has no on_event"):
        install_listener(object())


def test_a_graphs_own_listener_that_is_also_installed_gets_each_event_once() -> None:
    recorder = Recorder()
    graph = _graph(listeners=[recorder])
    install_listener(recorder)
    try:
        graph.invoke({})
    finally:
        uninstall_listener(recorder)
    assert [e.kind for e in recorder.events].count("run_start") == 1
    assert [e.node for e in recorder.events if e.kind == "node_start"] == ["a", "b"]


def test_events_no_listener_reads_are_not_built() -> None:
    only_nodes = Recorder(frozenset({NodeStart.KIND}))
    _graph(listeners=[only_nodes], saver=MemorySaver()).invoke({}, {"thread_id": "k"})
    assert [e.node for e in only_nodes.events] == ["a", "b"]

    everything = Recorder()
    _graph(listeners=[only_nodes, everything], saver=MemorySaver()).invoke({}, {"thread_id": "k"})
    assert any(isinstance(e, CheckpointEvent) for e in everything.events)
    assert {e.kind for e in only_nodes.events} == {"node_start"}  # what it did not ask: never
