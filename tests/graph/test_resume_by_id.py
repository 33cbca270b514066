"""Answers go where they are addressed: ``Command(resume={interrupt_id: value})`` answers
each pending interrupt by its id, and an id that is not pending is refused, never taken as
the answer to another question (a double submit, a stale id)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from checkpoint import BaseCheckpointSaver
from graph_agent import (
    END,
    START,
    Command,
    CompiledGraph,
    GraphResumeError,
    KeyStrategy,
    StateGraph,
    interrupt,
)

STALE = "00000000-1111-2222-3333-444444444444"  # shaped like an interrupt id, never pending


def _form(saver: BaseCheckpointSaver) -> CompiledGraph:
    """One node asking two questions in turn."""

    def ask(state: Any) -> dict[str, Any]:
        name = interrupt("name?")
        age = interrupt("age?")
        return {"profile": f"{name}/{age}"}

    graph = StateGraph().add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END)
    return graph.compile(saver=saver)


def _pending(app: CompiledGraph, config: dict[str, Any]) -> list[str]:
    return [i.id for i in app.get_state(config).interrupts]


def test_a_double_submit_is_refused_not_taken_as_the_next_answer(durable):
    app = _form(durable)
    config = {"thread_id": "double"}
    app.invoke({}, config)
    (first,) = _pending(app, config)
    app.invoke(Command(resume={first: "Ada"}), config)
    (second,) = _pending(app, config)
    assert second != first
    with pytest.raises(GraphResumeError) as caught:
        app.invoke(Command(resume={first: "Ada"}), config)  # the same click, sent again
    message = str(caught.value)
    assert first in message and second in message and "'ask'" in message
    snapshot = app.get_state(config)
    assert [i.id for i in snapshot.interrupts] == [second] and "profile" not in snapshot.values
    assert app.invoke(Command(resume={second: 36}), config)["profile"] == "Ada/36"


def test_a_double_submit_is_refused_async(durable):
    app = _form(durable)
    config = {"thread_id": "adouble"}

    async def main() -> dict[str, Any]:
        await app.ainvoke({}, config)
        (first,) = [i.id for i in (await app.aget_state(config)).interrupts]
        await app.ainvoke(Command(resume={first: "Ada"}), config)
        (second,) = [i.id for i in (await app.aget_state(config)).interrupts]
        with pytest.raises(GraphResumeError, match=first):
            await app.ainvoke(Command(resume={first: "Ada"}), config)
        return dict(await app.ainvoke(Command(resume={second: 36}), config))

    assert asyncio.run(main())["profile"] == "Ada/36"


def test_every_key_of_a_dict_keyed_by_ids_must_be_pending(durable):
    app = _form(durable)
    config = {"thread_id": "keys"}
    app.invoke({}, config)
    (pending,) = _pending(app, config)
    for resume in ({STALE: "x"}, {pending: "Ada", STALE: "x"}, {pending: "Ada", "note": 1}):
        with pytest.raises(GraphResumeError) as caught:
            app.invoke(Command(resume=resume), config)
        message = str(caught.value)
        assert pending in message and "node 'ask'" in message
        assert all(repr(k) in message for k in resume if k != pending)
    assert _pending(app, config) == [pending]  # nothing was answered
    assert app.invoke(Command(resume={pending: "Ada"}), config) == {}  # still asks the age


def test_a_dict_without_interrupt_ids_is_the_value_of_the_only_pending_interrupt(durable):
    graph = StateGraph()
    graph.add_node("ask", lambda s: {"answer": interrupt("approve?")})
    graph.add_edge(START, "ask").add_edge("ask", END)
    app = graph.compile(saver=durable)
    config = {"thread_id": "value"}
    app.invoke({}, config)
    answer = {"approved": True, "call_1": "ok"}
    assert app.invoke(Command(resume=answer), config)["answer"] == answer


def test_parallel_interrupts_refuse_an_unknown_id_beside_known_ones(durable):
    def asker(name: str) -> Any:
        return lambda s: {"answers": [f"{name}={interrupt(name)}"]}

    graph = StateGraph(key_strategies={"answers": KeyStrategy.APPEND})
    graph.add_node("fan", lambda s: None).add_edge(START, "fan")
    for name in ("a", "b"):
        graph.add_node(name, asker(name)).add_edge("fan", name).add_edge(name, END)
    app = graph.compile(saver=durable)
    config = {"thread_id": "par"}
    app.invoke({}, config)
    ids = {i.node: i.id for i in app.get_state(config).interrupts}
    with pytest.raises(GraphResumeError, match=STALE) as caught:
        app.invoke(Command(resume={ids["a"]: 1, STALE: 2}), config)
    assert ids["a"] in str(caught.value) and ids["b"] in str(caught.value)
    final = app.invoke(Command(resume={ids["a"]: 1, ids["b"]: 2}), config)
    assert final["answers"] == ["a=1", "b=2"]


def _nested(saver: BaseCheckpointSaver) -> CompiledGraph:
    child = StateGraph()

    def ask(state: Any) -> dict[str, Any]:
        first = interrupt("first?")
        return {"answers": f"{first}+{interrupt('second?')}"}

    child.add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END)
    parent = StateGraph()
    parent.add_node("sub", child.compile()).add_edge(START, "sub").add_edge("sub", END)
    return parent.compile(saver=saver)


def test_ids_of_a_paused_subgraph_are_answered_and_checked_the_same_way(durable):
    app = _nested(durable)
    config = {"thread_id": "nested"}
    app.invoke({}, config)
    (first,) = _pending(app, config)
    app.invoke(Command(resume={first: {"approved": True}}), config)  # a dict, by id
    (second,) = _pending(app, config)
    assert second != first
    with pytest.raises(GraphResumeError, match=first):
        app.invoke(Command(resume={first: {"approved": True}}), config)
    final = app.invoke(Command(resume={"approved": False}), config)  # the only one pending
    assert final["answers"] == "{'approved': True}+{'approved': False}"
