"""Parallel sync work never deadlocks, however deep graphs and agents nest."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from graph_agent import END, START, ReactAgent, StateGraph, tool
from graph_agent._runtime.pool import run_all, thread_pool
from graph_agent.models import FunctionChatModel

from ..agent.conftest import tool_calls

TIMEOUT = 60.0


def finishes(work: Callable[[], Any]) -> Any:
    """``work()``'s result; fails (instead of hanging the suite) if it takes over a minute."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as error:
            box["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(TIMEOUT)
    assert not thread.is_alive(), f"did not finish in {TIMEOUT} s: deadlocked?"
    if "error" in box:
        raise box["error"]
    return box["value"]


def _inner_graph() -> Any:
    """One step that runs two parallel nodes, each sleeping briefly."""

    def sleeper(key: str) -> Callable[[Any], dict[str, Any]]:
        def node(state: Any) -> dict[str, Any]:
            time.sleep(0.02)
            return {key: state["n"]}

        return node

    graph = StateGraph()
    graph.add_node("a", sleeper("a")).add_node("b", sleeper("b"))
    graph.add_edge(START, "a").add_edge(START, "b").add_edge(["a", "b"], END)
    return graph.compile()


def _fan_out(width: int, node: Callable[[int], Callable[[Any], dict[str, Any]]]) -> Any:
    graph = StateGraph()
    names = [f"n{i}" for i in range(width)]
    for i, name in enumerate(names):
        graph.add_node(name, node(i))
        graph.add_edge(START, name)
    graph.add_edge(names, END)
    return graph.compile()


def test_more_nested_parallel_graphs_than_pool_workers_finish() -> None:
    inner = _inner_graph()
    width = 48
    assert width > thread_pool()._max_workers  # every worker ends up waiting on nested work

    def node(i: int) -> Callable[[Any], dict[str, Any]]:
        def run(state: Any) -> dict[str, Any]:
            out = inner.invoke({"n": i})
            return {f"r{i}": out["a"] + out["b"]}

        return run

    outer = _fan_out(width, node)
    final = finishes(lambda: outer.invoke({}))
    assert [final[f"r{i}"] for i in range(width)] == [2 * i for i in range(width)]
    final = finishes(lambda: asyncio.run(outer.ainvoke({})))  # async outer, sync nodes
    assert [final[f"r{i}"] for i in range(width)] == [2 * i for i in range(width)]


def _agent() -> ReactAgent:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        time.sleep(0.01)
        return key.upper()

    def reply(prompt: Any) -> Any:  # the user asked: two tool calls; tools answered: done
        if prompt.messages[-1].message_type == "user":
            return tool_calls(("lookup", {"key": "a"}), ("lookup", {"key": "b"}))
        return "done"

    return ReactAgent(name="inner", model=FunctionChatModel(reply), tools=[lookup])


def test_a_hundred_parallel_nodes_each_calling_an_agent_with_parallel_tools_finish() -> None:
    width = 100

    def node_for(agent: ReactAgent) -> Callable[[int], Callable[[Any], dict[str, Any]]]:
        def node(i: int) -> Callable[[Any], dict[str, Any]]:
            def run(state: Any) -> dict[str, Any]:
                state_after = agent.invoke("look up a and b", {"thread_id": f"t{i}"})
                responses = state_after["messages"][2].responses
                return {f"r{i}": "".join(r.response_data for r in responses)}

            return run

        return node

    outer = _fan_out(width, node_for(_agent()))
    final = finishes(lambda: outer.invoke({}))
    assert {final[f"r{i}"] for i in range(width)} == {"AB"}
    outer = _fan_out(width, node_for(_agent()))
    final = finishes(lambda: asyncio.run(outer.ainvoke({})))
    assert {final[f"r{i}"] for i in range(width)} == {"AB"}


def test_run_all_nested_three_deep_with_more_calls_than_workers() -> None:
    workers = thread_pool()._max_workers

    def leaf() -> int:
        time.sleep(0.001)
        return 1

    def middle() -> int:
        return sum(r for r in run_all([leaf] * 4) if isinstance(r, int))

    def top() -> int:
        return sum(r for r in run_all([middle] * 4) if isinstance(r, int))

    results = finishes(lambda: run_all([top] * (workers + 8)))
    assert results == [16] * (workers + 8)


def test_run_all_keeps_order_and_returns_each_failure() -> None:
    def fail() -> int:
        raise ValueError("no")

    results = run_all([lambda: 1, fail, lambda: 3])
    assert results[0] == 1 and results[2] == 3
    assert isinstance(results[1], ValueError)


def test_run_all_runs_calls_concurrently_when_workers_are_free() -> None:
    barrier = threading.Barrier(3, timeout=10)
    assert run_all([barrier.wait, barrier.wait, barrier.wait]) is not None


def test_run_all_runs_every_call_at_once_when_each_waits_for_all_the_others() -> None:
    width = 12  # helpers join one after another until every call has a thread
    barrier = threading.Barrier(width, timeout=10)
    results = finishes(lambda: run_all([barrier.wait] * width))
    assert sorted(results) == list(range(width))  # no BrokenBarrierError: all were waiting


def test_a_call_taken_back_from_the_queue_sees_the_callers_context() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    var.set("caller")

    def read() -> str:
        return var.get()

    blockers = [threading.Event() for _ in range(thread_pool()._max_workers)]
    release = threading.Event()
    busy = [thread_pool().submit(lambda e=e: (e.set(), release.wait(10))) for e in blockers]
    try:
        for event in blockers:
            event.wait(10)
        # every worker is busy: the second call is taken back and run here
        assert run_all([read, read]) == ["caller", "caller"]
    finally:
        release.set()
        for future in busy:
            future.result(10)
