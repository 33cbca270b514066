"""compile() validation, get_graph() and draw_mermaid()."""

from __future__ import annotations

import re

import networkx as nx
import pytest

from checkpoint import MemorySaver
from graph_agent import END, START, GraphValidationError, StateGraph


def _noop(state):
    return None


def test_compile_reports_every_problem_at_once():
    graph = StateGraph()
    graph.add_node("a", _noop).add_node("b", _noop)
    graph.add_edge(START, "a").add_edge("a", "ghost").add_edge("phantom", "b")
    graph.add_conditional_edges("b", lambda s: "x", {"x": "nowhere", "y": END})
    with pytest.raises(GraphValidationError) as info:
        graph.compile()
    problems = info.value.problems
    assert len(problems) == 5  # three bad edges, and what they leave stranded:
    assert any("['b'] cannot be reached from START" in p for p in problems)
    assert any("['a'] can never reach END" in p for p in problems)
    text = str(info.value)
    assert "'ghost'" in text and "'phantom'" in text and "'nowhere'" in text
    assert "label 'x'" in text
    assert "known nodes: ['a', 'b']" in text


def test_compile_reports_reachability_problems_together():
    graph = StateGraph()
    graph.add_node("a", _noop).add_node("island", _noop).add_node("loop", _noop)
    graph.add_edge(START, "a").add_edge("a", END).add_edge("island", END)
    graph.add_edge("a", "loop").add_edge("loop", "loop")
    with pytest.raises(GraphValidationError) as info:
        graph.compile()
    problems = info.value.problems
    assert any("['island'] cannot be reached from START" in p for p in problems)
    assert any("['loop'] can never reach END" in p for p in problems)


def test_compile_requires_an_entry_point():
    graph = StateGraph().add_node("a", _noop).add_edge("a", END)
    with pytest.raises(GraphValidationError, match="no entry point"):
        graph.compile()


def test_interrupts_must_name_nodes_and_need_a_saver():
    graph = StateGraph().add_node("a", _noop).add_edge(START, "a").add_edge("a", END)
    with pytest.raises(GraphValidationError) as info:
        graph.compile(interrupt_before=["b"])
    assert "interrupt_before names unknown node 'b'" in str(info.value)
    with pytest.raises(GraphValidationError, match="need a saver"):
        graph.compile(interrupt_after=["a"])
    graph.compile(saver=MemorySaver(), interrupt_after=["a"])


@pytest.mark.parametrize(
    ("name", "message"),
    [("", "non-empty"), (START, "reserved"), (END, "reserved"), ("a", "already in the graph")],
)
def test_add_node_rejects_bad_names(name, message):
    graph = StateGraph().add_node("a", _noop)
    with pytest.raises(GraphValidationError, match=message):
        graph.add_node(name, _noop)


def test_add_node_rejects_non_callables_and_zero_arg_functions():
    with pytest.raises(GraphValidationError, match="needs a callable"):
        StateGraph().add_node("a", 42)  # type: ignore[arg-type]
    with pytest.raises(GraphValidationError, match=r"\(state\) or \(state, config\)"):
        StateGraph().add_node("a", lambda: None)


def test_bad_key_strategy_is_refused():
    with pytest.raises(GraphValidationError, match="KeyStrategy or a callable"):
        StateGraph(key_strategies={"k": "append"})  # type: ignore[dict-item]


def test_second_conditional_edge_from_a_node_is_refused():
    graph = StateGraph().add_node("a", _noop)
    graph.add_conditional_edges("a", lambda s: END)
    with pytest.raises(GraphValidationError, match="already has conditional edges"):
        graph.add_conditional_edges("a", lambda s: END)


def _sample():
    graph = StateGraph()
    graph.add_node("model", _noop).add_node("tools", _noop).add_node("my node", _noop)
    graph.add_edge(START, "model")
    graph.add_conditional_edges(
        "model", lambda s: "end", {"tools": "tools", "end": END, "other": "my node"}
    )
    graph.add_edge("tools", "model").add_edge("my node", END)
    return graph.compile()


def test_get_graph_is_the_networkx_digraph_with_labelled_conditional_edges():
    g = _sample().get_graph()
    assert isinstance(g, nx.DiGraph)
    assert set(g.nodes) == {START, "model", "tools", "my node", END}
    assert g.edges["model", "tools"] == {"conditional": True, "label": "tools"}
    assert g.edges["model", END]["label"] == "end"
    assert g.edges[START, "model"]["conditional"] is False
    assert nx.has_path(g, START, END)


def test_draw_mermaid_is_valid_flowchart_text():
    text = _sample().draw_mermaid()
    lines = text.strip().splitlines()
    assert lines[0] == "flowchart TD"
    assert '    model["model"]' in lines
    assert '    my_node["my node"]' in lines  # ids are sanitised, labels kept
    assert '    model -.->|"tools"| tools' in lines
    assert '    model -.->|"end"| __end__' in lines
    assert "    __start__ --> model" in lines
    node_ids = set()
    edge = re.compile(r"^    (\w+) (-->|-\.->(\|\"[^\"]*\"\|)?) (\w+)$")
    declare = re.compile(r'^    (\w+)(\["[^"]*"\]|\(\["[^"]*"\]\))$')
    for line in lines[1:]:
        if m := declare.match(line):
            node_ids.add(m.group(1))
        else:
            m = edge.match(line)
            assert m, f"not a Mermaid node or edge line: {line!r}"
            assert m.group(1) in node_ids and m.group(4) in node_ids


def test_draw_mermaid_escapes_awkward_names():
    graph = StateGraph().add_node('say "hi" <now>', _noop).add_node("end", _noop)
    graph.add_edge(START, 'say "hi" <now>').add_edge('say "hi" <now>', "end").add_edge("end", END)
    text = graph.compile().draw_mermaid()
    assert "say \u201dhi\u201d \u2039now\u203a" in text  # no quote or tag breaks the syntax
    assert '    end_["end"]' in text  # 'end' is a Mermaid keyword


def test_router_without_path_map_may_reach_any_node():
    graph = StateGraph().add_node("a", _noop).add_node("b", _noop)
    graph.add_edge(START, "a").add_conditional_edges("a", lambda s: END).add_edge("b", END)
    g = graph.compile().get_graph()  # 'b' is reachable through the router
    assert g.has_edge("a", "b") and g.has_edge("a", END)


def test_a_state_schema_given_as_key_strategies_is_refused_with_what_to_do() -> None:
    from typing import TypedDict

    class State(TypedDict):
        count: int

    with pytest.raises(GraphValidationError, match=r"not 'State'.*KeyStrategy\.APPEND"):
        StateGraph(State)  # what a LangGraph user writes
    with pytest.raises(GraphValidationError, match="not 'list'"):
        StateGraph(["messages"])
