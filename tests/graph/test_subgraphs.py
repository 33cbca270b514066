"""Subgraphs: a graph as a node, its checkpoints under a namespace in the parent's thread,
interrupts that pause the parent, Command.PARENT, and subgraph streaming."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from graph_agent import (
    END,
    START,
    Command,
    GraphUsageError,
    GraphValidationError,
    KeyStrategy,
    Send,
    StateGraph,
    interrupt,
)
from graph_agent.events import NodeStart, RunEnd


def _child(ask: bool = False) -> StateGraph:
    child = StateGraph(key_strategies={"log": KeyStrategy.APPEND})

    def research(state: Any) -> dict[str, Any]:
        return {"log": [f"research {state['topic']}"], "notes": f"notes on {state['topic']}"}

    def review(state: Any) -> dict[str, Any]:
        verdict = interrupt({"notes": state["notes"]}) if ask else "auto"
        return {"log": [f"review {verdict}"], "verdict": verdict}

    child.add_node("research", research).add_node("review", review)
    child.add_edge(START, "research").add_edge("research", "review").add_edge("review", END)
    return child


def _parent(ask: bool = False, **node_kw: Any) -> StateGraph:
    parent = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    parent.add_node("plan", lambda s: {"log": ["plan"], "topic": "owls"})
    parent.add_node("sub", _child(ask).compile(), **node_kw)
    parent.add_node("write", lambda s: {"log": [f"write {s.get('verdict')}"]})
    parent.add_edge(START, "plan").add_edge("plan", "sub").add_edge("sub", "write")
    return parent.add_edge("write", END)


def test_a_subgraph_sees_the_state_and_its_writes_come_back():
    result = _parent().compile().invoke({"log": ["in"]})
    assert result["log"] == ["in", "plan", "research owls", "review auto", "write auto"]
    assert result["notes"] == "notes on owls" and result["verdict"] == "auto"


def test_input_and_output_keys_narrow_what_the_subgraph_sees_and_returns():
    result = _parent(input_keys=["topic"], output_keys=["verdict"]).compile().invoke({"log": []})
    assert result["log"] == ["plan", "write auto"] and "notes" not in result


def test_async_subgraph():
    result = asyncio.run(_parent().compile().ainvoke({"log": []}))
    assert result["log"] == ["plan", "research owls", "review auto", "write auto"]


def test_an_interrupt_in_the_child_pauses_the_parent_and_resume_continues_it(durable):
    app = _parent(ask=True).compile(saver=durable)
    config = {"thread_id": "sub"}
    app.invoke({"log": []}, config)
    snapshot = app.get_state(config)
    assert snapshot.next == ("sub",)
    (pending,) = snapshot.interrupts
    assert pending.node == "review" and pending.value == {"notes": "notes on owls"}
    assert len(pending.namespace) == 1 and pending.namespace[0].startswith("sub:")
    deep = app.get_state(config, subgraphs=True)
    (child,) = deep.subgraphs
    assert child.namespace == pending.namespace and child.next == ("review",)
    assert child.values["log"] == ["plan", "research owls"]
    final = app.invoke(Command(resume="approved"), config)
    # 'research' ran once: the child continued where it stopped
    assert final["log"] == ["plan", "research owls", "review approved", "write approved"]
    assert app.get_state(config).next == ()
    assert app.get_state(config, subgraphs=True).subgraphs == ()


def test_the_child_resumes_in_another_process_over_a_durable_saver(tmp_path):
    from checkpoint import SqliteSaver

    path = tmp_path / "sub.sqlite"
    with SqliteSaver(path) as saver:
        _parent(ask=True).compile(saver=saver).invoke({"log": []}, {"thread_id": "p"})
    with SqliteSaver(path) as saver:  # a fresh graph and saver, as a second process has
        final = (
            _parent(ask=True).compile(saver=saver).invoke(Command(resume="ok"), {"thread_id": "p"})
        )
    assert final["log"][-2:] == ["review ok", "write ok"]


def test_async_interrupt_in_a_child(durable):
    app = _parent(ask=True).compile(saver=durable)
    config = {"thread_id": "asub"}

    async def main() -> dict[str, Any]:
        await app.ainvoke({"log": []}, config)
        assert (await app.aget_state(config, subgraphs=True)).subgraphs
        return dict(await app.ainvoke(Command(resume="yes"), config))

    assert asyncio.run(main())["log"][-1] == "write yes"


def test_stream_with_subgraphs_yields_the_childs_nodes_with_their_namespace():
    app = _parent().compile()
    outputs = [(o.namespace, o.node) for o in app.stream({"log": []}, subgraphs=True)]
    names = [node for _, node in outputs]
    assert names == ["plan", "research", "review", "sub", "write"]
    assert all(ns == () for ns, node in outputs if node in ("plan", "sub", "write"))
    assert all(ns[0].startswith("sub:") for ns, node in outputs if node in ("research", "review"))
    assert [o.node for o in app.stream({"log": []})] == ["plan", "sub", "write"]


def test_subgraph_events_carry_the_namespace():
    events = list(_parent().compile().stream_events({"log": []}))
    starts = [(e.namespace, e.node) for e in events if isinstance(e, NodeStart)]
    assert [n for _, n in starts] == ["plan", "sub", "research", "review", "write"]
    child_ends = [e for e in events if isinstance(e, RunEnd) and e.namespace]
    assert len(child_ends) == 1 and child_ends[0].namespace[0].startswith("sub:")


def test_command_parent_routes_in_the_parent_graph():
    child = StateGraph()
    child.add_node(
        "handoff", lambda s: Command(update={"by": "child"}, goto="billing", graph=Command.PARENT)
    )
    child.add_edge(START, "handoff").add_edge("handoff", END)
    parent = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    parent.add_node("triage", child.compile(), destinations=["billing"])
    parent.add_node("billing", lambda s: {"log": [f"billing, sent by {s['by']}"]})
    parent.add_node("after", lambda s: {"log": ["after"]})
    parent.add_edge(START, "triage").add_edge("triage", "after")
    parent.add_edge("after", END).add_edge("billing", END)
    assert parent.compile().invoke({})["log"] == ["billing, sent by child"]


def test_send_inside_a_subgraph_map_reduce(durable):
    child = StateGraph(key_strategies={"findings": KeyStrategy.APPEND})
    child.add_node("split", lambda s: None)
    child.add_node("dig", lambda s: {"findings": [s["t"].upper()]})
    child.add_edge(START, "split").add_edge("dig", END)
    child.add_conditional_edges("split", lambda s: [Send("dig", {"t": t}) for t in s["topics"]])
    parent = StateGraph(key_strategies={"findings": KeyStrategy.APPEND})
    parent.add_node("research", child)
    parent.add_edge(START, "research").add_edge("research", END)
    app = parent.compile(saver=durable)
    result = app.invoke({"topics": ["a", "b", "c"]}, {"thread_id": "mr"})
    assert result["findings"] == ["A", "B", "C"]


def test_a_subgraph_compiled_with_its_own_saver_is_refused():
    from checkpoint import MemorySaver

    with pytest.raises(GraphUsageError, match="compile it without one"):
        StateGraph().add_node("sub", _child().compile(saver=MemorySaver()))
    with pytest.raises(GraphValidationError, match="contains"):
        StateGraph().add_node("a|b", lambda s: None)


def test_a_failed_subgraph_alone_in_its_step_resumes_where_the_child_failed(durable):
    ran: list[str] = []
    child = StateGraph(key_strategies={"log": KeyStrategy.APPEND})

    def step(name: str) -> Any:
        def run(state: Any) -> dict[str, Any]:
            ran.append(name)
            if name == "second" and ran.count("second") == 1:
                raise ConnectionError("child failed")
            return {"log": [name]}

        return run

    child.add_node("first", step("first")).add_node("second", step("second"))
    child.add_edge(START, "first").add_edge("first", "second").add_edge("second", END)
    parent = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    parent.add_node("sub", child).add_edge(START, "sub").add_edge("sub", END)
    app = parent.compile(saver=durable)
    config = {"thread_id": "retry-sub"}
    with pytest.raises(ConnectionError):
        app.invoke({"log": []}, config)
    assert app.invoke(None, config)["log"] == ["first", "second"]
    assert ran == ["first", "second", "second"]  # 'first' did not run again


def test_a_subgraph_retried_by_its_policy_continues_its_child(durable):
    from graph_agent import RetryPolicy

    ran: list[str] = []
    child = StateGraph(key_strategies={"log": KeyStrategy.APPEND})

    def second(state: Any) -> dict[str, Any]:
        ran.append("second")
        if ran.count("second") == 1:
            raise ConnectionError("once")
        return {"log": ["second"]}

    child.add_node("first", lambda s: ran.append("first") or {"log": ["first"]})
    child.add_node("second", second)
    child.add_edge(START, "first").add_edge("first", "second").add_edge("second", END)
    parent = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    parent.add_node("sub", child, retry=RetryPolicy(initial_interval=0, jitter=False))
    parent.add_edge(START, "sub").add_edge("sub", END)
    result = parent.compile(saver=durable).invoke({"log": []}, {"thread_id": "retry"})
    assert result["log"] == ["first", "second"] and ran == ["first", "second", "second"]


def test_async_state_of_paused_subgraphs_with_an_async_only_client():
    import fakeredis

    from checkpoint import RedisSaver

    saver = RedisSaver(async_client=fakeredis.FakeAsyncRedis())
    app = _parent(ask=True).compile(saver=saver)

    async def main() -> Any:
        await app.ainvoke({"log": []}, {"thread_id": "aio"})
        return await app.aget_state({"thread_id": "aio"}, subgraphs=True)

    snapshot = asyncio.run(main())
    assert snapshot.subgraphs[0].next == ("review",)


def test_a_subgraphs_own_listeners_see_its_events_and_the_parents_see_them_too():
    class Kinds:
        def __init__(self) -> None:
            self.seen: list[tuple[str, str | None]] = []

        def on_event(self, event: Any) -> None:
            if event.kind == "node_start":
                self.seen.append((event.node, event.namespace[0][:4] if event.namespace else None))

    inner, outer = Kinds(), Kinds()
    child = StateGraph()
    child.add_node("research", lambda s: {"notes": "n"})
    child.add_edge(START, "research").add_edge("research", END)
    parent = StateGraph()
    parent.add_node("sub", child.compile(listeners=[inner]))
    parent.add_edge(START, "sub").add_edge("sub", END)
    parent.compile().invoke({})
    assert inner.seen == [("research", "sub:")]
    parent.compile(listeners=[outer]).invoke({})
    assert outer.seen == [("sub", None), ("research", "sub:")]
    assert inner.seen == [("research", "sub:")] * 2


def test_stream_with_subgraphs_yields_the_subgraph_s_nodes_every_time_it_runs() -> None:
    inner = StateGraph()
    inner.add_node("inner", lambda s: {"n": s.get("n", 0) + 1})
    inner.add_edge(START, "inner").add_edge("inner", END)
    outer = StateGraph()
    outer.add_node("sub", inner.compile()).add_node("check", lambda s: {})
    outer.add_edge(START, "sub").add_edge("sub", "check")
    outer.add_conditional_edges("check", lambda s: "sub" if s["n"] < 3 else END, ["sub", END])
    nodes = [o.node for o in outer.compile().stream({"n": 0}, subgraphs=True)]
    assert nodes == ["inner", "sub", "check"] * 3
