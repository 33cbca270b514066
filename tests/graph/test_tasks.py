"""Task identity: stable interrupt ids, several interrupts in one step, failures that keep
the finished tasks' work, and the input checkpointed before any node runs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from graph_agent import (
    END,
    START,
    Command,
    GraphResumeError,
    KeyStrategy,
    StateGraph,
    Updates,
    interrupt,
)
from graph_agent._runtime.ids import derive_id
from graph_agent.graph._tasks import PULL


def _two_askers(calls: list[str]) -> StateGraph:
    graph = StateGraph(key_strategies={"answers": KeyStrategy.APPEND})

    def asker(name: str) -> Any:
        def node(state: Any) -> dict[str, Any]:
            calls.append(name)
            return {"answers": [f"{name}={interrupt(f'question for {name}')}"]}

        return node

    graph.add_node("a", asker("a")).add_node("b", asker("b"))
    graph.add_edge(START, "a").add_edge(START, "b").add_edge(["a", "b"], END)
    return graph


def test_parallel_interrupts_are_answered_each_with_its_own_value(durable):
    calls: list[str] = []
    app = _two_askers(calls).compile(saver=durable)
    config = {"thread_id": "two"}
    app.invoke({}, config)
    pending = {i.node: i for i in app.get_state(config).interrupts}
    assert set(pending) == {"a", "b"}
    assert pending["a"].id != pending["b"].id and pending["a"].value == "question for a"
    with pytest.raises(GraphResumeError, match="2 pending interrupts") as info:
        app.invoke(Command(resume="x"), config)
    assert pending["a"].id in str(info.value) and pending["b"].id in str(info.value)
    # answering one: the other stays pending, with the same id
    app.invoke(Command(resume={pending["a"].id: 1}), config)
    still = app.get_state(config).interrupts
    assert [(i.node, i.id) for i in still] == [("b", pending["b"].id)]
    final = app.invoke(Command(resume={pending["b"].id: 2}), config)
    assert final["answers"] == ["a=1", "b=2"]


def test_interrupt_ids_are_stable_across_resumes_and_differ_per_call(durable):
    graph = StateGraph()

    def twice(state: Any) -> dict[str, Any]:
        first = interrupt("first?")
        second = interrupt("second?")
        return {"got": [first, second]}

    graph.add_node("twice", twice).add_edge(START, "twice").add_edge("twice", END)
    app = graph.compile(saver=durable)
    config = {"thread_id": "ids"}
    app.invoke({}, config)
    (first,) = app.get_state(config).interrupts
    app.invoke(Command(resume=1), config)
    (second,) = app.get_state(config).interrupts
    assert second.value == "second?" and second.id != first.id
    # derived, not random: computed here on their own from the documented parts, the task's
    # (namespace, the checkpoint its step started from and its step, node, kind, position)
    # and then the interrupt's (its task, the scope's key, the call's position)
    (start,) = [s for s in app.get_state_history(config) if s.metadata["source"] == "input"]
    task_id = derive_id(start.checkpoint_id, start.step + 1, "twice", PULL, 0)
    assert (first.id, second.id) == (derive_id(task_id, "", 0), derive_id(task_id, "", 1))
    again = graph.compile(saver=durable)  # read back the same by another compiled graph
    assert again.get_state(config).interrupts[0].id == second.id
    assert app.invoke(Command(resume=2), config)["got"] == [1, 2]


def _failing_sibling(ran: list[str], fail_times: int) -> StateGraph:
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    failures = {"left": fail_times}

    def node(name: str) -> Any:
        def run(state: Any) -> dict[str, Any]:
            ran.append(name)
            if name == "flaky" and failures["left"] > 0:
                failures["left"] -= 1
                raise ConnectionError("flaky failed")
            return {"log": [name]}

        return run

    for name in ("ok1", "flaky", "ok2", "after"):
        graph.add_node(name, node(name))
    for name in ("ok1", "flaky", "ok2"):
        graph.add_edge(START, name).add_edge(name, "after")
    graph.add_edge("after", END)
    return graph


def test_a_failed_task_keeps_its_siblings_work_and_the_retry_runs_only_it(durable):
    ran: list[str] = []
    app = _failing_sibling(ran, 1).compile(saver=durable)
    config = {"thread_id": "f"}
    with pytest.raises(ConnectionError):
        app.invoke({"log": ["in"]}, config)
    assert sorted(ran) == ["flaky", "ok1", "ok2"]
    head = app.get_state(config)
    assert head.metadata["source"] == "error" and head.values["log"] == ["in"]
    assert set(head.next) == {"ok1", "flaky", "ok2"}
    ran.clear()
    final = app.invoke(None, config)
    assert ran == ["flaky", "after"]  # ok1 and ok2 are not run twice
    assert final["log"] == ["in", "ok1", "flaky", "ok2", "after"]  # merged in node order


def test_async_failure_keeps_finished_siblings(durable):
    ran: list[str] = []
    app = _failing_sibling(ran, 1).compile(saver=durable)
    config = {"thread_id": "af"}

    async def main() -> dict[str, Any]:
        with pytest.raises(ConnectionError):
            await app.ainvoke({"log": ["in"]}, config)
        return dict(await app.ainvoke(None, config))

    final = asyncio.run(main())
    assert final["log"] == ["in", "ok1", "flaky", "ok2", "after"]
    assert ran.count("flaky") == 2 and ran.count("after") == 1


def test_a_kept_write_of_several_updates_survives_a_siblings_failure(durable):
    attempts: list[int] = []
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("many", lambda s: Updates({"log": ["m1"], "last": "m1"}, {"log": ["m2"]}))

    def flaky(state: Any) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("down")
        return {"log": ["flaky"]}

    graph.add_node("flaky", flaky)
    graph.add_edge(START, "many").add_edge(START, "flaky").add_edge(["many", "flaky"], END)
    app = graph.compile(saver=durable)
    config = {"thread_id": "u"}
    with pytest.raises(ConnectionError):
        app.invoke({"log": []}, config)
    final = app.invoke(None, config)
    assert final["log"] == ["m1", "m2", "flaky"] and final["last"] == "m1"


def test_an_empty_input_whose_first_node_fails_can_be_retried(durable):
    attempts: list[int] = []

    def first(state: Any) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("down")
        return {"x": 1}

    graph = StateGraph().add_node("first", first).add_edge(START, "first")
    app = graph.add_edge("first", END).compile(saver=durable)
    config = {"thread_id": "empty"}
    with pytest.raises(RuntimeError):
        app.invoke({}, config)
    snapshot = app.get_state(config)
    assert snapshot.metadata["source"] == "input" and snapshot.next == ("first",)
    assert app.invoke(None, config) == {"x": 1}


def test_a_thread_can_be_forked_from_before_its_first_node(durable):
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("n", lambda s: {"log": ["n"]}).add_edge(START, "n").add_edge("n", END)
    app = graph.compile(saver=durable)
    config = {"thread_id": "fork"}
    app.invoke({"log": ["a"]}, config)
    first_input = list(app.get_state_history(config))[-1]
    assert first_input.metadata["source"] == "input" and first_input.values == {"log": ["a"]}
    assert app.invoke(None, first_input.config)["log"] == ["a", "n"]
