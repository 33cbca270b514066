"""Send (map-reduce), Command(update, goto) from a node, and RetryPolicy."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from graph_agent import (
    END,
    START,
    Command,
    InvalidRouteError,
    KeyStrategy,
    RetryPolicy,
    Send,
    StateGraph,
    interrupt,
)
from graph_agent.events import NodeError


def _map_reduce(pause_on: int | None = None) -> StateGraph:
    graph = StateGraph(key_strategies={"results": KeyStrategy.APPEND})
    graph.add_node("plan", lambda s: {"items": list(range(s["n"]))})

    def work(state: Any) -> dict[str, Any]:
        item = state["item"]
        if item == pause_on:
            interrupt(f"check {item}")
        return {"results": [item * 10]}

    graph.add_node("work", work)
    graph.add_node("reduce", lambda s: {"total": sum(s["results"])})
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", lambda s: [Send("work", {"item": i}) for i in s["items"]])
    graph.add_edge("work", "reduce").add_edge("reduce", END)
    return graph


def test_send_runs_a_task_per_payload_and_merges_in_send_order():
    result = _map_reduce().compile().invoke({"n": 5})
    assert result["results"] == [0, 10, 20, 30, 40] and result["total"] == 100
    assert "item" not in result  # a Send's payload is the task's own state


def test_send_async():
    result = asyncio.run(_map_reduce().compile().ainvoke({"n": 4}))
    assert result["results"] == [0, 10, 20, 30] and result["total"] == 60


def test_pending_sends_survive_a_pause(durable):
    app = _map_reduce(pause_on=2).compile(saver=durable)
    config = {"thread_id": "sends"}
    app.invoke({"n": 4}, config)
    snapshot = app.get_state(config)
    assert snapshot.next == ("work",) and [i.value for i in snapshot.interrupts] == ["check 2"]
    result = app.invoke(Command(resume="ok"), config)
    assert result["results"] == [0, 10, 20, 30] and result["total"] == 60


def test_a_send_to_an_unknown_node_is_a_clear_error():
    graph = StateGraph().add_node("a", lambda s: None).add_edge(START, "a")
    graph.add_conditional_edges("a", lambda s: [Send("nowhere", {})])
    with pytest.raises(InvalidRouteError, match=r"'nowhere'.*known nodes"):
        graph.compile().invoke({})


def test_send_checks_its_arguments():
    with pytest.raises(TypeError, match="arg must be a dict"):
        Send("work", 3)  # type: ignore[arg-type]


def _router_graph() -> StateGraph:
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})

    def decide(state: Any) -> Command:
        target = state["to"]
        return Command(update={"log": ["decide"]}, goto=target)

    graph.add_node("decide", decide, destinations=["left", "right", END])
    graph.add_node("left", lambda s: {"log": ["left"]})
    graph.add_node("right", lambda s: {"log": ["right"]})
    graph.add_edge(START, "decide").add_edge("decide", "left")  # goto replaces this edge
    graph.add_edge("left", END).add_edge("right", END)
    return graph


@pytest.mark.parametrize(
    ("to", "log"),
    [
        ("right", ["decide", "right"]),
        (END, ["decide"]),
        (["left", "right"], ["decide", "left", "right"]),
    ],
)
def test_command_goto_replaces_the_nodes_edges(to, log):
    assert _router_graph().compile().invoke({"to": to})["log"] == log


def test_command_goto_sends():
    graph = StateGraph(key_strategies={"out": KeyStrategy.APPEND})
    fan = lambda s: Command(goto=[Send("w", {"v": v}) for v in "xyz"])  # noqa: E731
    graph.add_node("fan", fan, destinations=["w"])
    graph.add_node("w", lambda s: {"out": [s["v"].upper()]})
    graph.add_edge(START, "fan").add_edge("w", END)
    assert graph.compile().invoke({})["out"] == ["X", "Y", "Z"]


def test_a_node_reached_only_by_goto_must_be_declared():
    graph = StateGraph().add_node("a", lambda s: Command(goto="b")).add_node("b", lambda s: None)
    graph.add_edge(START, "a").add_edge("b", END)
    with pytest.raises(Exception, match=r"\['b'\] cannot be reached.*destinations=\[\.\.\.\]"):
        graph.compile()
    graph = StateGraph().add_node("a", lambda s: None, destinations=["zz"]).add_edge(START, "a")
    with pytest.raises(Exception, match="declares destination 'zz', an unknown node"):
        graph.compile()


def test_command_goto_to_an_unknown_node_names_the_node():
    with pytest.raises(InvalidRouteError, match="node 'decide' returned Command"):
        _router_graph().compile().invoke({"to": "missing"})


def test_command_goto_is_kept_when_a_sibling_fails(durable):
    attempts: list[int] = []
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    decide = lambda s: Command(update={"log": ["decide"]}, goto="right")  # noqa: E731
    graph.add_node("decide", decide, destinations=["right"])

    def flaky(state: Any) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("once")
        return {"log": ["flaky"]}

    graph.add_node("flaky", flaky).add_node("right", lambda s: {"log": ["right"]})
    graph.add_edge(START, "decide").add_edge(START, "flaky").add_edge("flaky", END)
    graph.add_edge("right", END)
    app = graph.compile(saver=durable)
    config = {"thread_id": "cmd"}
    with pytest.raises(RuntimeError):
        app.invoke({}, config)
    assert app.invoke(None, config)["log"] == ["decide", "flaky", "right"]


def test_command_parent_outside_a_subgraph_is_an_error():
    graph = StateGraph().add_node("a", lambda s: Command(goto=END, graph=Command.PARENT))
    graph.add_edge(START, "a").add_edge("a", END)
    with pytest.raises(Exception, match="not running as a subgraph"):
        graph.compile().invoke({})


def test_command_as_input_takes_no_goto(saver):
    app = _router_graph().compile(saver=saver)
    with pytest.raises(Exception, match="as input, Command takes resume= and update="):
        app.invoke(Command(goto="left"), {"thread_id": "x"})


class _Events:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def on_event(self, event: Any) -> None:
        self.events.append(event)


def _retrying(fail: int, policy: RetryPolicy) -> tuple[StateGraph, list[str]]:
    ran: list[str] = []
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})

    def flaky(state: Any) -> dict[str, Any]:
        ran.append("flaky")
        if ran.count("flaky") <= fail:
            raise ConnectionError(f"attempt {ran.count('flaky')}")
        return {"log": ["flaky"]}

    def steady(state: Any) -> dict[str, Any]:
        ran.append("steady")
        return {"log": ["steady"]}

    graph.add_node("flaky", flaky, retry=policy).add_node("steady", steady)
    graph.add_edge(START, "flaky").add_edge(START, "steady").add_edge(["flaky", "steady"], END)
    return graph, ran


FAST = RetryPolicy(max_attempts=3, initial_interval=0.001, jitter=False)


def test_retry_policy_retries_only_the_failing_task_and_reports_each_attempt():
    graph, ran = _retrying(2, FAST)
    listener = _Events()
    result = graph.compile(listeners=[listener]).invoke({})
    assert result["log"] == ["flaky", "steady"]
    assert ran.count("flaky") == 3 and ran.count("steady") == 1
    errors = [e for e in listener.events if isinstance(e, NodeError)]
    assert [(e.node, e.attempt, str(e.error)) for e in errors] == [
        ("flaky", 1, "attempt 1"),
        ("flaky", 2, "attempt 2"),
    ]


def test_retry_policy_gives_up_after_max_attempts_async():
    graph, ran = _retrying(5, FAST)
    with pytest.raises(ConnectionError, match="attempt 3"):
        asyncio.run(graph.compile().ainvoke({}))
    assert ran.count("flaky") == 3


def test_retry_policy_retries_only_what_retry_on_names():
    graph, ran = _retrying(1, RetryPolicy(initial_interval=0, retry_on=ValueError))
    with pytest.raises(ConnectionError):
        graph.compile().invoke({})
    assert ran.count("flaky") == 1


def test_retry_policy_backoff():
    policy = RetryPolicy(initial_interval=1.0, backoff_factor=2.0, max_interval=3.0, jitter=False)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 3.0, 3.0]
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
