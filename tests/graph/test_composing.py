"""What a graph offers code that composes graphs (the agents' flows): its private keys, itself
as a node of another graph, and graphs drawn inside one of its nodes."""

from __future__ import annotations

import pytest

from checkpoint import MemorySaver
from graph_agent.errors import GraphUsageError
from graph_agent.graph import END, START, KeyStrategy, OverAllState, StateGraph


def _child() -> StateGraph:
    child = StateGraph({"log": KeyStrategy.APPEND}, private_keys={"seen"})
    child.add_node("work", lambda s: {"log": ["child"], "seen": True})
    child.add_edge(START, "work")
    child.add_edge("work", END)
    return child


def test_private_keys_are_the_declared_ones() -> None:
    graph = _child().compile()
    assert graph.private_keys == frozenset({"seen"})
    plain = StateGraph()
    plain.add_node("a", lambda s: {})
    plain.add_edge(START, "a")
    plain.add_edge("a", END)
    assert plain.compile().private_keys == frozenset()


def test_subgraph_node_runs_the_graph_in_the_parents_thread() -> None:
    own = MemorySaver()  # not used as a node: the parent's saver keeps its checkpoints
    parent = StateGraph({"log": KeyStrategy.APPEND})
    parent.add_node("inner", _child().compile(saver=own).subgraph_node("inner"))
    parent.add_edge(START, "inner")
    parent.add_edge("inner", END)
    graph = parent.compile(saver=MemorySaver())
    outputs = list(graph.stream({"log": ["parent"]}, {"thread_id": "t"}, subgraphs=True))
    assert [(o.node, o.namespace[0].split(":")[0] if o.namespace else None) for o in outputs] == [
        ("work", "inner"),
        ("inner", None),
    ]
    assert graph.get_state({"thread_id": "t"}).values.data() == {
        "log": ["parent", "child"],
        "seen": True,  # handed back like any key it wrote: the composition drops it or not
    }
    assert list(own.list("t")) == []


def test_draw_inside_draws_graphs_a_node_runs_itself() -> None:
    parent = StateGraph()
    parent.add_node("tools", lambda s: {})
    parent.add_edge(START, "tools")
    parent.add_edge("tools", END)
    graph = parent.compile()
    assert "work" not in graph.draw_mermaid()
    graph.draw_inside("tools", [("helper", _child().compile())])
    drawn = graph.draw_mermaid()
    assert "helper" in drawn and "work" in drawn
    assert "work" not in graph.draw_mermaid(subgraphs=False)


def test_draw_inside_an_unknown_node_says_which_exist() -> None:
    parent = StateGraph()
    parent.add_node("tools", lambda s: OverAllState({}))
    parent.add_edge(START, "tools")
    parent.add_edge("tools", END)
    with pytest.raises(GraphUsageError, match="no node 'tool' \\(its nodes: tools\\)"):
        parent.compile().draw_inside("tool", [])
