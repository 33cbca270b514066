"""Small graphs the saver tests run."""

from __future__ import annotations

from typing import Any

from checkpoint import BaseCheckpointSaver
from graph_agent import END, START, CompiledGraph, KeyStrategy, StateGraph


def chat_graph(saver: BaseCheckpointSaver) -> CompiledGraph:
    """One turn = the user's message plus one reply; ``turns`` counts them (a REPLACE key)."""

    def reply(state: Any) -> dict[str, Any]:
        return {
            "messages": [f"reply to {state['messages'][-1]}"],
            "turns": len(state["messages"]) // 2 + 1,
        }

    graph = StateGraph(key_strategies={"messages": KeyStrategy.APPEND})
    graph.add_node("reply", reply).add_edge(START, "reply").add_edge("reply", END)
    return graph.compile(saver=saver)
