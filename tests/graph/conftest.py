"""Small graphs shared by the engine tests."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import END, START, CompiledGraph, KeyStrategy, OverAllState, StateGraph


def react_like(
    saver: MemorySaver | None = None, tool_rounds: int = 2, **compile_kw: Any
) -> CompiledGraph:
    """model -> (tools -> model)* -> END; the model asks for a tool ``tool_rounds`` times per
    user message, counting tool results since the last user message."""

    def model(state: OverAllState) -> dict[str, Any]:
        messages = state["messages"]
        since_user = 0
        for message in reversed(messages):
            if message.startswith("user:"):
                break
            since_user += message.startswith("tool:")
        if since_user < tool_rounds:
            return {"messages": [f"ai:call {since_user}"]}
        return {"messages": [f"ai:final after {since_user}"]}

    def tools(state: OverAllState) -> dict[str, Any]:
        return {"messages": [f"tool:{state['messages'][-1]}"]}

    def route(state: OverAllState) -> str:
        return "tools" if state["messages"][-1].startswith("ai:call") else "end"

    graph = StateGraph(key_strategies={"messages": KeyStrategy.APPEND})
    graph.add_node("model", model).add_node("tools", tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, {"tools": "tools", "end": END})
    graph.add_edge("tools", "model")
    return graph.compile(saver=saver, **compile_kw)


def chain(n: int, saver: MemorySaver | None = None, **compile_kw: Any) -> CompiledGraph:
    graph = StateGraph()
    for i in range(n):
        graph.add_node(f"n{i}", lambda s: {"x": s["x"] + 1})
    graph.add_edge(START, "n0")
    for i in range(n - 1):
        graph.add_edge(f"n{i}", f"n{i + 1}")
    graph.add_edge(f"n{n - 1}", END)
    return graph.compile(saver=saver, **compile_kw)


@pytest.fixture
def saver() -> MemorySaver:
    return MemorySaver()
