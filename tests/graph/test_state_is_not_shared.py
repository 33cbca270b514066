"""Immutable history: what a node, hook, tool or caller does to the state it is handed
(lists and dicts) never changes what the engine and the saver hold."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import (
    END,
    START,
    KeyStrategy,
    OverAllState,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    StateGraph,
)
from hooks import ModelHook


class Trimmer(ModelHook):
    """A hook that (wrongly) trims the history in place instead of returning Overwrite."""

    name = "trimmer"

    def before_model(self, state: OverAllState, config: RunnableConfig) -> Any:
        del state["messages"][:-1]
        return None


def test_a_hook_that_deletes_messages_in_place_cannot_wipe_the_thread() -> None:
    saver = MemorySaver()
    agent = ReactAgent(
        name="a", model=ScriptedChatModel(["one", "two", "three"]), hooks=[Trimmer()], saver=saver
    )
    config = {"thread_id": "t"}
    agent.call("first", config)
    agent.call("second", config)
    texts = [m.text for m in agent.get_state(config).values["messages"]]
    assert texts == ["first", "one", "second", "two"]


def test_a_node_mutating_its_state_changes_nothing_stored() -> None:
    def add(state: OverAllState) -> dict[str, Any]:
        state["log"].clear()
        state["meta"]["seen"] = True
        return {"log": ["added"]}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND, "meta": KeyStrategy.MERGE})
    graph.add_node("add", add).add_edge(START, "add").add_edge("add", END)
    app = graph.compile(saver=MemorySaver())
    out = app.invoke({"log": ["kept"], "meta": {"n": 1}}, {"thread_id": "t"})
    assert out["log"] == ["kept", "added"] and out["meta"] == {"n": 1}


@pytest.mark.parametrize("key", ["log", "meta"])
def test_mutating_what_invoke_returned_changes_nothing_stored(key: str) -> None:
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND, "meta": KeyStrategy.MERGE})
    graph.add_node("add", lambda s: {"log": ["x"]}).add_edge(START, "add").add_edge("add", END)
    app = graph.compile(saver=MemorySaver())
    out = app.invoke({"log": [], "meta": {"n": 1}}, {"thread_id": "t"})
    out[key].clear()
    stored = app.get_state({"thread_id": "t"}).values
    assert stored["log"] == ["x"] and stored["meta"] == {"n": 1}
