"""Pausing threads: interrupt_before / interrupt_after, interrupt(value), Command."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import (
    END,
    START,
    Command,
    GraphResumeError,
    GraphUsageError,
    KeyStrategy,
    StateGraph,
    interrupt,
)

from .conftest import react_like


def _approval_graph(saver: MemorySaver, calls: list[str] | None = None):
    calls = calls if calls is not None else []

    def ask(state):
        calls.append("ask")
        answer = interrupt({"question": f"approve {state['amount']}?"})
        return {"approved": answer == "yes"}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("prepare", lambda s: {"log": ["prepared"]}).add_node("ask", ask)
    graph.add_node("pay", lambda s: {"log": ["paid"]}).add_node(
        "reject", lambda s: {"log": ["rejected"]}
    )
    graph.add_edge(START, "prepare").add_edge("prepare", "ask")
    graph.add_conditional_edges(
        "ask", lambda s: "pay" if s["approved"] else "reject", ["pay", "reject"]
    )
    graph.add_edge("pay", END).add_edge("reject", END)
    return graph.compile(saver=saver)


def test_dynamic_interrupt_pauses_and_resume_value_is_returned(saver):
    calls: list[str] = []
    app = _approval_graph(saver, calls)
    config = {"thread_id": "pay-1"}
    paused = app.invoke({"amount": 120}, config)
    assert paused["log"] == ["prepared"] and "approved" not in paused
    snapshot = app.get_state(config)
    assert snapshot.next == ("ask",)
    (pending,) = snapshot.interrupts
    assert pending.node == "ask" and pending.when == "during"
    assert pending.value == {"question": "approve 120?"}
    final = app.invoke(Command(resume="yes"), config)
    assert final["log"] == ["prepared", "paid"] and final["approved"] is True
    assert calls == ["ask", "ask"]  # the node re-runs from its start on resume
    assert app.get_state(config).interrupts == ()


def test_resume_errors_explain_what_to_do(saver):
    app = _approval_graph(saver)
    config = {"thread_id": "p"}
    app.invoke({"amount": 1}, config)
    with pytest.raises(
        GraphResumeError, match=r"waiting for a resume value.*Command\(resume=value\)"
    ):
        app.invoke(None, config)
    with pytest.raises(
        GraphResumeError,
        match=r"is paused .* resume it with invoke\(Command\(resume=value\), config\) before",
    ):
        app.invoke({"amount": 2}, config)
    assert app.get_state(config).interrupts  # still paused, nothing lost
    app.invoke(Command(resume="no"), config)
    with pytest.raises(GraphResumeError, match="not paused"):
        app.invoke(Command(resume="again"), config)


def test_command_resume_on_a_static_interrupt_is_refused(saver):
    app = react_like(saver, tool_rounds=1, interrupt_before=["tools"])
    app.invoke({"messages": ["user:hi"]}, {"thread_id": "s"})
    with pytest.raises(
        GraphResumeError, match=r"not waiting for a resume value.*invoke\(None, config\)"
    ):
        app.invoke(Command(resume="x"), {"thread_id": "s"})


def test_several_interrupts_in_one_node(saver):
    def form(state):
        name = interrupt("name?")
        age = interrupt("age?")
        return {"profile": f"{name}/{age}"}

    graph = StateGraph().add_node("form", form).add_edge(START, "form").add_edge("form", END)
    app = graph.compile(saver=saver)
    config = {"thread_id": "f"}
    app.invoke({}, config)
    assert app.get_state(config).interrupts[0].value == "name?"
    app.invoke(Command(resume="Ada"), config)
    assert app.get_state(config).interrupts[0].value == "age?"
    assert app.invoke(Command(resume=36), config)["profile"] == "Ada/36"


def test_parallel_interrupts_are_resumed_by_id(saver):
    def asker(name):
        def run(state):
            return {"answers": [f"{name}={interrupt(name)}"]}

        return run

    graph = StateGraph(key_strategies={"answers": KeyStrategy.APPEND}).add_node(
        "fan", lambda s: None
    )
    for name in ("a", "b"):
        graph.add_node(name, asker(name)).add_edge("fan", name).add_edge(name, END)
    graph.add_edge(START, "fan")
    app = graph.compile(saver=saver)
    config = {"thread_id": "par"}
    app.invoke({}, config)
    pending = {i.node: i.id for i in app.get_state(config).interrupts}
    assert set(pending) == {"a", "b"}
    with pytest.raises(GraphResumeError, match="2 pending interrupts"):
        app.invoke(Command(resume="x"), config)
    final = app.invoke(Command(resume={pending["a"]: 1, pending["b"]: 2}), config)
    assert final["answers"] == ["a=1", "b=2"]


def test_interrupt_before_and_after(saver):
    app = react_like(saver, tool_rounds=1, interrupt_before=["tools"], interrupt_after=["tools"])
    config = {"thread_id": "ba"}
    app.invoke({"messages": ["user:hi"]}, config)
    first = app.get_state(config)
    assert first.next == ("tools",) and [(i.node, i.when) for i in first.interrupts] == [
        ("tools", "before")
    ]
    history_len = len(list(app.get_state_history(config)))
    # the input is checkpointed first; the pause is recorded on the step's own checkpoint
    assert history_len == 2
    app.invoke(None, config)
    second = app.get_state(config)
    assert second.next == ("model",) and [(i.node, i.when) for i in second.interrupts] == [
        ("tools", "after")
    ]
    assert second.values["messages"][-1] == "tool:ai:call 0"
    final = app.invoke(None, config)
    assert final["messages"][-1] == "ai:final after 1"
    assert app.get_state(config).interrupts == ()


def test_interrupt_before_the_first_node_checkpoints_the_input(saver):
    app = react_like(saver, interrupt_before=["model"])
    config = {"thread_id": "first"}
    state = app.invoke({"messages": ["user:hi"]}, config)
    assert state["messages"] == ["user:hi"]
    snapshot = app.get_state(config)
    assert snapshot.next == ("model",) and snapshot.metadata["source"] == "input"
    # resuming runs the model; the next turn's model step pauses again
    app.invoke(None, config)


def test_command_update_is_merged_before_resuming(saver):
    app = react_like(saver, tool_rounds=1, interrupt_before=["tools"])
    config = {"thread_id": "cu"}
    app.invoke({"messages": ["user:hi"]}, config)
    final = app.invoke(Command(update={"messages": ["user:approved"]}), config)
    assert "tool:user:approved" in final["messages"]


def test_interrupt_needs_a_saver_and_a_node():
    graph = StateGraph().add_node("ask", lambda s: {"v": interrupt("q")})
    graph.add_edge(START, "ask").add_edge("ask", END)
    with pytest.raises(
        GraphUsageError, match="node 'ask' called interrupt\\(\\) but the graph has no saver"
    ):
        graph.compile().invoke({})
    with pytest.raises(GraphUsageError, match="outside a graph node"):
        interrupt("q")


def test_interrupt_is_not_swallowed_by_except_exception(saver):
    def careless(state):
        try:
            value = interrupt("q")
        except Exception:
            value = "swallowed"
        return {"v": value}

    graph = StateGraph().add_node("n", careless).add_edge(START, "n").add_edge("n", END)
    app = graph.compile(saver=saver)
    app.invoke({}, {"thread_id": "c"})
    assert app.get_state({"thread_id": "c"}).interrupts[0].value == "q"
    assert app.invoke(Command(resume="given"), {"thread_id": "c"})["v"] == "given"


def test_async_interrupts_in_async_and_sync_nodes(saver):
    async def ask_async(state):
        return {"a": interrupt("async?")}

    def ask_sync(state):
        return {"b": interrupt("sync?")}

    graph = StateGraph().add_node("x", ask_async).add_node("y", ask_sync)
    graph.add_edge(START, "x").add_edge("x", "y").add_edge("y", END)
    app = graph.compile(saver=saver)

    async def main() -> dict[str, Any]:
        config = {"thread_id": "as"}
        await app.ainvoke({}, config)
        assert (await app.aget_state(config)).interrupts[0].value == "async?"
        await app.ainvoke(Command(resume=1), config)
        assert (await app.aget_state(config)).interrupts[0].value == "sync?"
        return dict(await app.ainvoke(Command(resume=2), config))

    assert asyncio.run(main()) == {"a": 1, "b": 2}


def test_resume_works_from_another_graph_instance_sharing_the_saver():
    saver = MemorySaver(copy=True)
    config = {"thread_id": "shared"}
    _approval_graph(saver).invoke({"amount": 5}, config)
    final = _approval_graph(saver).invoke(Command(resume="yes"), config)
    assert final["log"] == ["prepared", "paid"]


def test_siblings_of_an_interrupted_node_do_not_run_again(saver):
    runs: list[str] = []

    def side(state):
        runs.append("side")
        return {"log": ["side effect"]}

    def ask(state):
        runs.append("ask")
        return {"log": [f"answer {interrupt('ok?')}"]}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("side", side).add_node("ask", ask)
    graph.add_edge(START, "side").add_edge(START, "ask").add_edge("side", END).add_edge("ask", END)
    app = graph.compile(saver=MemorySaver(copy=True))
    config = {"thread_id": "sib"}
    app.invoke({}, config)
    assert app.get_state(config).values.get("log") is None  # nothing merged while paused
    final = app.invoke(Command(resume="yes"), config)
    assert runs == ["side", "ask", "ask"]
    assert final["log"] == ["side effect", "answer yes"]  # merged in node order


def test_update_state_while_paused_keeps_finished_siblings(saver):
    runs: list[str] = []
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("side", lambda s: runs.append("side") or {"log": ["side"]})
    graph.add_node("ask", lambda s: {"log": [interrupt("q")]})
    graph.add_edge(START, "side").add_edge(START, "ask").add_edge("side", END).add_edge("ask", END)
    app = graph.compile(saver=saver)
    config = {"thread_id": "keep"}
    app.invoke({}, config)
    app.update_state(config, {"note": "checked"})
    final = app.invoke(Command(resume="a"), config)
    assert runs == ["side"] and final["log"] == ["side", "a"] and final["note"] == "checked"
