"""Immutable history: what a node, hook, tool or caller does to the state it is handed
(lists and dicts) never changes what the engine and the saver hold, on every saver (the
durable ones hold the heads they used lately, decoded)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fakeredis
import pytest

from checkpoint import BaseCheckpointSaver, MemorySaver, RedisSaver, SqliteSaver
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


@pytest.fixture(params=["memory", "sqlite", "redis"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> BaseCheckpointSaver:
    if request.param == "sqlite":
        made = SqliteSaver(tmp_path / "state.sqlite")
        request.addfinalizer(made.close)
        return made
    if request.param == "redis":
        client = fakeredis.FakeRedis()
        request.addfinalizer(client.close)
        return RedisSaver(client)
    return MemorySaver()


class Trimmer(ModelHook):
    """A hook that (wrongly) trims the history in place instead of returning Overwrite."""

    name = "trimmer"

    def before_model(self, state: OverAllState, config: RunnableConfig) -> Any:
        del state["messages"][:-1]
        return None


def test_a_hook_that_deletes_messages_in_place_cannot_wipe_the_thread(
    saver: BaseCheckpointSaver,
) -> None:
    agent = ReactAgent(
        name="a", model=ScriptedChatModel(["one", "two", "three"]), hooks=[Trimmer()], saver=saver
    )
    config = {"thread_id": "t"}
    agent.call("first", config)
    agent.call("second", config)
    texts = [m.text for m in agent.get_state(config).values["messages"]]
    assert texts == ["first", "one", "second", "two"]


def test_a_node_mutating_its_state_changes_nothing_stored(saver: BaseCheckpointSaver) -> None:
    def add(state: OverAllState) -> dict[str, Any]:
        state["log"].clear()
        state["meta"]["seen"] = True
        return {"log": ["added"]}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND, "meta": KeyStrategy.MERGE})
    graph.add_node("add", add).add_edge(START, "add").add_edge("add", END)
    app = graph.compile(saver=saver)
    out = app.invoke({"log": ["kept"], "meta": {"n": 1}}, {"thread_id": "t"})
    assert out["log"] == ["kept", "added"] and out["meta"] == {"n": 1}
    again = app.invoke({"log": ["more"]}, {"thread_id": "t"})
    assert again["log"] == ["kept", "added", "more", "added"] and again["meta"] == {"n": 1}


@pytest.mark.parametrize("key", ["log", "meta"])
def test_mutating_what_invoke_returned_changes_nothing_stored(
    key: str, saver: BaseCheckpointSaver
) -> None:
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND, "meta": KeyStrategy.MERGE})
    graph.add_node("add", lambda s: {"log": ["x"]}).add_edge(START, "add").add_edge("add", END)
    app = graph.compile(saver=saver)
    out = app.invoke({"log": [], "meta": {"n": 1}}, {"thread_id": "t"})
    out[key].clear()
    stored = app.get_state({"thread_id": "t"}).values
    assert stored["log"] == ["x"] and stored["meta"] == {"n": 1}
    stored[key].clear()  # what get_state handed out, changed too
    out = app.invoke({"log": ["y"]}, {"thread_id": "t"})
    assert out["log"] == ["x", "y", "x"] and out["meta"] == {"n": 1}
