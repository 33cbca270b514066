"""Threads: multi-turn memory, snapshots, history, update_state, time travel, failures."""

from __future__ import annotations

import asyncio

import pytest

from checkpoint import CheckpointConflictError, CheckpointNotFoundError
from graph_agent import (
    END,
    START,
    GraphRecursionError,
    GraphResumeError,
    GraphUsageError,
    InvalidUpdateError,
    KeyStrategy,
    RunnableConfig,
    StateGraph,
)

from .conftest import chain, react_like


def test_second_invoke_on_a_thread_continues_the_conversation(saver):
    app = react_like(saver)
    t1 = RunnableConfig(thread_id="t1")
    first = app.invoke({"messages": ["user:hi"]}, t1)
    assert first["messages"] == [
        "user:hi",
        "ai:call 0",
        "tool:ai:call 0",
        "ai:call 1",
        "tool:ai:call 1",
        "ai:final after 2",
    ]
    second = app.invoke({"messages": ["user:again"]}, t1)
    assert second["messages"][:6] == first["messages"]
    assert second["messages"][6] == "user:again"
    assert second["messages"][-1] == "ai:final after 2"
    other = app.invoke({"messages": ["user:other"]}, RunnableConfig(thread_id="t2"))
    assert other["messages"][0] == "user:other" and len(other["messages"]) == 6


def test_without_a_saver_every_invoke_starts_fresh():
    app = react_like(None)
    app.invoke({"messages": ["user:hi"]}, {"thread_id": "t"})
    assert len(app.invoke({"messages": ["user:hi"]}, {"thread_id": "t"})["messages"]) == 6
    with pytest.raises(GraphUsageError, match="needs a saver"):
        app.get_state({"thread_id": "t"})


def test_get_state_and_history(saver):
    app = react_like(saver, tool_rounds=1)
    config = {"thread_id": "h"}
    assert app.get_state(config) is None
    app.invoke({"messages": ["user:hi"]}, config)
    snapshot = app.get_state(config)
    assert snapshot.next == () and snapshot.interrupts == ()
    assert snapshot.values["messages"][-1] == "ai:final after 1"
    history = list(app.get_state_history(config))
    # the input first, then one checkpoint per super-step: model, tools, model
    assert [h.metadata["nodes"] for h in history] == [["model"], ["tools"], ["model"], []]
    assert [h.metadata["source"] for h in history] == ["loop", "loop", "loop", "input"]
    assert [h.next for h in history] == [(), ("model",), ("tools",), ("model",)]
    assert history[0].checkpoint_id == snapshot.checkpoint_id
    assert history[0].parent_id == history[1].checkpoint_id and history[3].parent_id is None
    assert [len(h.values["messages"]) for h in history] == [4, 3, 2, 1]
    assert sorted(h.checkpoint_id for h in history) == [h.checkpoint_id for h in reversed(history)]
    assert [h.checkpoint_id for h in app.get_state_history(config, limit=2)] == [
        h.checkpoint_id for h in history[:2]
    ]
    before = list(app.get_state_history(history[0].config))
    assert [h.checkpoint_id for h in before] == [h.checkpoint_id for h in history[1:]]


def test_replay_from_a_checkpoint_forks_and_moves_the_head(saver):
    app = react_like(saver, tool_rounds=1)
    config = RunnableConfig(thread_id="tt")
    app.invoke({"messages": ["user:hi"]}, config)
    history = list(app.get_state_history(config))
    after_tool_call = history[2]  # model asked for the tool; next is 'tools'
    assert after_tool_call.next == ("tools",)
    replayed = app.invoke(None, after_tool_call.config)
    assert replayed["messages"] == history[0].values["messages"]
    new_history = list(app.get_state_history(config))
    assert len(new_history) == 6  # two new checkpoints branch off the old one
    assert new_history[1].parent_id == after_tool_call.checkpoint_id
    # fork with new input from the first checkpoint: a finished-state is not needed
    forked = app.invoke({"messages": ["user:fork"]}, history[0].config)
    assert forked["messages"][4] == "user:fork"
    assert app.get_state(config).values["messages"] == forked["messages"]


def test_unknown_checkpoint_id_is_a_clear_error(saver):
    app = react_like(saver)
    app.invoke({"messages": ["user:hi"]}, {"thread_id": "t"})
    bad = {"thread_id": "t", "checkpoint_id": "nope"}
    with pytest.raises(CheckpointNotFoundError, match="thread 't' has no checkpoint 'nope'"):
        app.invoke(None, bad)
    with pytest.raises(CheckpointNotFoundError, match="get_state_history"):
        app.get_state(bad)
    with pytest.raises(CheckpointNotFoundError):
        app.update_state(bad, {"messages": ["x"]})


def test_update_state_without_as_node_keeps_the_position(saver):
    app = react_like(saver, tool_rounds=1, interrupt_before=["tools"])
    config = {"thread_id": "u"}
    app.invoke({"messages": ["user:hi"]}, config)
    paused = app.get_state(config)
    assert paused.next == ("tools",)
    new_config = app.update_state(config, {"messages": ["user:note"]})
    assert new_config.checkpoint_id == app.get_state(config).checkpoint_id
    updated = app.get_state(config)
    assert updated.values["messages"][-1] == "user:note"  # appended by the key strategy
    assert updated.next == ("tools",) and updated.interrupts == paused.interrupts
    assert updated.metadata["source"] == "update"
    result = app.invoke(None, config)
    assert result["messages"][-2] == "tool:user:note"


def test_update_state_as_node_continues_from_its_successors(saver):
    app = react_like(saver, tool_rounds=1, interrupt_before=["tools"])
    config = {"thread_id": "u2"}
    app.invoke({"messages": ["user:hi"]}, config)
    # pretend the model answered instead of calling the tool: its router now says END
    app.update_state(config, {"messages": ["ai:final by hand"]}, as_node="model")
    state = app.get_state(config)
    assert state.next == () and state.interrupts == ()
    app.update_state(config, {"messages": ["ai:call 9"]}, as_node="model")
    assert app.get_state(config).next == ("tools",)
    with pytest.raises(GraphUsageError, match="as_node='ghost'"):
        app.update_state(config, {}, as_node="ghost")


def test_update_state_on_a_new_thread_creates_it(saver):
    app = react_like(saver)
    app.update_state({"thread_id": "new"}, {"messages": ["user:seeded"]})
    result = app.invoke({"messages": ["user:go"]}, {"thread_id": "new"})
    assert result["messages"][:2] == ["user:seeded", "user:go"]


def test_update_state_rejects_bad_values_and_writes_nothing(saver):
    app = react_like(saver)
    app.invoke({"messages": ["user:hi"]}, {"thread_id": "b"})
    head = app.get_state({"thread_id": "b"}).checkpoint_id
    with pytest.raises(
        InvalidUpdateError, match=r"update_state\(\) was given str; state updates must be a dict"
    ):
        app.update_state({"thread_id": "b"}, "not a dict")  # type: ignore[arg-type]
    assert app.get_state({"thread_id": "b"}).checkpoint_id == head


def test_failed_step_writes_no_checkpoint_and_the_thread_resumes(saver):
    # a step whose only task failed stores nothing: the thread stays at its last step
    attempts = {"n": 0}

    def flaky(state):
        attempts["n"] += 1
        if attempts["n"] == 1:
            raise ConnectionError("model unavailable")
        return {"log": ["flaky ok"]}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("first", lambda s: {"log": ["first"]}).add_node("flaky", flaky)
    graph.add_edge(START, "first").add_edge("first", "flaky").add_edge("flaky", END)
    app = graph.compile(saver=saver)
    config = {"thread_id": "f"}
    with pytest.raises(ConnectionError):
        app.invoke({"log": ["input"]}, config)
    snapshot = app.get_state(config)
    assert snapshot.values["log"] == ["input", "first"]
    assert snapshot.next == ("flaky",)
    assert len(list(app.get_state_history(config))) == 2  # the input, then 'first'

    assert app.invoke(None, config)["log"] == ["input", "first", "flaky ok"]


@pytest.mark.parametrize(
    "bad_node",
    [
        lambda s: ["not a dict"],
        lambda s: {"log": Exception("x"), "v": 1} if False else {1: 2},
    ],
)
def test_bad_update_leaves_the_last_good_checkpoint(saver, bad_node):
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("ok", lambda s: {"log": ["ok"]}).add_node("bad", bad_node)
    graph.add_edge(START, "ok").add_edge("ok", "bad").add_edge("bad", END)
    app = graph.compile(saver=saver)
    with pytest.raises(InvalidUpdateError):
        app.invoke({"log": ["in"]}, {"thread_id": "x"})
    state = app.get_state({"thread_id": "x"})
    assert state.values["log"] == ["in", "ok"] and state.next == ("bad",)


def test_a_failing_first_step_keeps_the_input_and_can_be_retried(saver):
    attempts = {"n": 0}

    def route(state):
        attempts["n"] += 1
        return "x" if attempts["n"] == 1 else "b"

    graph = StateGraph().add_node("a", lambda s: {"v": 1}).add_node("b", lambda s: {"v": 2})
    graph.add_edge(START, "a").add_conditional_edges("a", route, {"b": "b"})
    graph.add_edge("b", END)
    app = graph.compile(saver=saver)
    with pytest.raises(Exception, match="'x'"):
        app.invoke({"v": 0, "note": "keep me"}, {"thread_id": "r"})
    snapshot = app.get_state({"thread_id": "r"})  # the step left nothing, the input stays
    assert snapshot.values == {"v": 0, "note": "keep me"} and snapshot.next == ("a",)
    assert snapshot.metadata["source"] == "input"
    assert app.invoke(None, {"thread_id": "r"})["v"] == 2


def test_recursion_error_keeps_progress_and_resumes_with_a_higher_limit(saver):
    app = chain(10, saver=saver, recursion_limit=4)
    config = RunnableConfig(thread_id="rec")
    with pytest.raises(GraphRecursionError, match="ran 4 super-steps"):
        app.invoke({"x": 0}, config)
    state = app.get_state(config)
    assert state.values["x"] == 4 and state.next == ("n4",)
    assert app.invoke(None, config.replace(recursion_limit=10))["x"] == 10


def test_resuming_a_finished_or_unknown_thread_is_refused(saver):
    app = react_like(saver)
    with pytest.raises(GraphResumeError, match="has nothing to resume"):
        app.invoke(None, {"thread_id": "ghost"})
    app.invoke({"messages": ["user:hi"]}, {"thread_id": "done"})
    with pytest.raises(GraphResumeError, match="is not paused: its last run finished"):
        app.invoke(None, {"thread_id": "done"})


def test_concurrent_writer_on_the_same_thread_is_refused(saver):
    app = chain(3, saver=saver)
    config = {"thread_id": "c"}
    app.invoke({"x": 0}, config)

    def intruder(state):
        app.invoke({"x": 100}, config)  # another run finishes on the same thread meanwhile
        return {"x": state["x"] + 1}

    graph = StateGraph().add_node("n0", intruder).add_edge(START, "n0").add_edge("n0", END)
    racing = graph.compile(saver=saver)
    with pytest.raises(CheckpointConflictError, match="thread 'c' moved"):
        racing.invoke({"x": 0}, config)
    assert app.get_state(config).values["x"] == 103  # the intruder's run is intact


def test_async_thread_apis(saver):
    app = react_like(saver, tool_rounds=1, interrupt_before=["tools"])

    async def main():
        config = {"thread_id": "a"}
        await app.ainvoke({"messages": ["user:hi"]}, config)
        paused = await app.aget_state(config)
        await app.aupdate_state(config, {"messages": ["user:extra"]})
        history = [s async for s in app.aget_state_history(config)]
        final = await app.ainvoke(None, config)
        return paused, history, final

    paused, history, final = asyncio.run(main())
    assert paused.next == ("tools",)
    assert len(history) == 3 and history[0].metadata["source"] == "update"
    assert final["messages"][-1] == "ai:final after 1"


def test_input_routed_straight_to_end_is_still_kept(saver):
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND}).add_node("work", lambda s: None)
    graph.add_conditional_edges(START, lambda s: "work" if s.get("go") else END, ["work", END])
    graph.add_edge("work", END)
    app = graph.compile(saver=saver)
    app.invoke({"log": ["first"]}, {"thread_id": "skip"})
    app.invoke({"log": ["second"]}, {"thread_id": "skip"})
    snapshot = app.get_state({"thread_id": "skip"})
    assert snapshot.values["log"] == ["first", "second"] and snapshot.next == ()


def test_run_tells_where_the_run_left_the_thread(saver):
    app = react_like(saver, tool_rounds=1, interrupt_before=["tools"])
    paused = app.run({"messages": ["user:hi"]}, {"thread_id": "o"})
    assert paused.next == ("tools",) and [i.when for i in paused.interrupts] == ["before"]
    finished = asyncio.run(app.arun(None, {"thread_id": "o"}))
    assert finished.next == () and finished.interrupts == ()
    assert finished.values["messages"][-1] == "ai:final after 1"
