"""Edits win: a value written by ``update_state`` or ``Command(update=...)`` while a subgraph
inside the thread is paused is kept when the run continues. The resumed child writes back
what it wrote itself, not its own copy of the parent's values from before the pause."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from checkpoint import BaseCheckpointSaver
from graph_agent import END, START, Command, CompiledGraph, KeyStrategy, StateGraph, interrupt

MESSAGES = {"messages": KeyStrategy.APPEND}
START_INPUT = {"topic": "owls", "messages": ["user: hi"]}
EDIT = {"topic": "cats", "messages": ["user: edit"]}  # a REPLACE key and an APPEND key


def _child(*nodes: str, fails: list[str] | None = None) -> StateGraph:
    """draft -> ``nodes``...: each of ``nodes`` asks (``interrupt``) and writes its answer;
    ``publish`` (if listed in ``fails``) fails the first time it runs."""
    child = StateGraph(key_strategies=MESSAGES)

    def draft(state: Any) -> dict[str, Any]:
        topic = state["topic"]
        return {"messages": [f"child: draft on {topic}"], "notes": f"notes on {topic}"}

    def asker(name: str) -> Any:
        def ask(state: Any) -> dict[str, Any]:
            if fails is not None and name in fails:
                fails.remove(name)
                raise ConnectionError(f"{name} failed")
            answer = interrupt(f"{name}?") if name != "publish" else "done"
            return {"messages": [f"child: {name} {answer}"], name: answer}

        return ask

    child.add_node("draft", draft).add_edge(START, "draft")
    previous = "draft"
    for name in nodes:
        child.add_node(name, asker(name)).add_edge(previous, name)
        previous = name
    child.add_edge(previous, END)
    return child


def _parent(child: StateGraph, saver: BaseCheckpointSaver, **node_kw: Any) -> CompiledGraph:
    parent = StateGraph(key_strategies=MESSAGES)
    parent.add_node("sub", child.compile(), **node_kw)
    parent.add_node("after", lambda s: {"messages": [f"parent: after, on {s['topic']}"]})
    parent.add_edge(START, "sub").add_edge("sub", "after").add_edge("after", END)
    return parent.compile(saver=saver)


def _check_one_edit(values: Any) -> None:
    assert values["messages"] == [
        "user: hi",
        "user: edit",
        "child: draft on owls",  # written before the pause: the child's own, kept
        "child: review ok",
        "parent: after, on cats",
    ]
    assert values["topic"] == "cats" and values["notes"] == "notes on owls"
    assert values["review"] == "ok"


@pytest.mark.parametrize("how", ["update_state", "command"])
def test_an_edit_made_while_the_child_is_paused_is_kept(durable, how):
    app = _parent(_child("review"), durable)
    config = {"thread_id": f"edit-{how}"}
    app.invoke(START_INPUT, config)
    assert app.get_state(config).next == ("sub",)
    if how == "update_state":
        app.update_state(config, EDIT)
        final = app.invoke(Command(resume="ok"), config)
    else:
        final = app.invoke(Command(update=EDIT, resume="ok"), config)
    _check_one_edit(final)
    _check_one_edit(app.get_state(config).values)


@pytest.mark.parametrize("how", ["update_state", "command"])
def test_an_edit_made_while_the_child_is_paused_is_kept_async(durable, how):
    app = _parent(_child("review"), durable)
    config = {"thread_id": f"aedit-{how}"}

    async def main() -> tuple[Any, Any]:
        await app.ainvoke(START_INPUT, config)
        if how == "update_state":
            await app.aupdate_state(config, EDIT)
            final = await app.ainvoke(Command(resume="ok"), config)
        else:
            final = await app.ainvoke(Command(update=EDIT, resume="ok"), config)
        snapshot = await app.aget_state(config)
        return final, snapshot.values

    final, stored = asyncio.run(main())
    _check_one_edit(final)
    _check_one_edit(stored)


def test_edits_at_each_of_two_pauses_are_kept(durable):
    app = _parent(_child("review", "sign"), durable)
    config = {"thread_id": "two"}
    app.invoke(START_INPUT, config)
    app.update_state(config, {"messages": ["user: edit 1"], "topic": "cats"})
    app.invoke(Command(resume="ok"), config)
    assert [i.node for i in app.get_state(config).interrupts] == ["sign"]
    final = app.invoke(Command(update={"messages": ["user: edit 2"]}, resume="yes"), config)
    assert final["messages"] == [
        "user: hi",
        "user: edit 1",
        "user: edit 2",
        "child: draft on owls",
        "child: review ok",
        "child: sign yes",
        "parent: after, on cats",
    ]
    assert final["topic"] == "cats" and final["review"] == "ok" and final["sign"] == "yes"


FAILED_ONCE = [
    "user: hi",
    "user: edit 1",
    "user: edit 2",
    "child: draft on owls",
    "child: review ok",
    "child: publish done",
    "parent: after, on cats",
]


def test_edits_are_kept_when_the_child_fails_after_a_pause_and_is_retried(durable):
    app = _parent(_child("review", "publish", fails=["publish"]), durable)
    config = {"thread_id": "fail"}
    app.invoke(START_INPUT, config)
    app.update_state(config, {"messages": ["user: edit 1"]})
    with pytest.raises(ConnectionError):
        app.invoke(Command(resume="ok"), config)
    app.update_state(config, {"messages": ["user: edit 2"], "topic": "cats"})
    assert app.invoke(None, config)["messages"] == FAILED_ONCE


def test_edits_are_kept_when_the_child_fails_after_a_pause_and_is_retried_async(durable):
    app = _parent(_child("review", "publish", fails=["publish"]), durable)
    config = {"thread_id": "afail"}

    async def main() -> Any:
        await app.ainvoke(START_INPUT, config)
        await app.aupdate_state(config, {"messages": ["user: edit 1"]})
        with pytest.raises(ConnectionError):
            await app.ainvoke(Command(resume="ok"), config)
        await app.aupdate_state(config, {"messages": ["user: edit 2"], "topic": "cats"})
        return await app.ainvoke(None, config)

    assert asyncio.run(main())["messages"] == FAILED_ONCE


def test_input_and_output_keys_still_narrow_a_resumed_child(durable):
    app = _parent(
        _child("review"), durable, input_keys=["topic", "messages"], output_keys=["messages"]
    )
    config = {"thread_id": "narrow"}
    app.invoke({**START_INPUT, "private": 1}, config)
    (child,) = app.get_state(config, subgraphs=True).subgraphs
    assert "private" not in child.values
    app.update_state(config, EDIT)
    final = app.invoke(Command(resume="ok"), config)
    assert final["messages"] == [
        "user: hi",
        "user: edit",
        "child: draft on owls",
        "child: review ok",
        "parent: after, on cats",
    ]
    assert final["topic"] == "cats" and "notes" not in final and "review" not in final


def test_a_child_continued_from_another_checkpoint_than_its_kept_one_falls_back(durable):
    """What the task kept names the child's checkpoint it stopped at. A child whose thread
    moved on without the parent knowing (here: edited directly; a process killed before
    the parent's checkpoint was written) gives what differs from the values it is handed."""
    child = _child("review")
    app = _parent(child, durable)
    config = {"thread_id": "moved"}
    app.invoke(START_INPUT, config)
    (paused,) = app.get_state(config, subgraphs=True).subgraphs
    child_config = {"thread_id": f"moved|{paused.namespace[0]}"}
    child.compile(saver=durable).update_state(child_config, {"notes": "fixed in the child"})
    final = app.invoke(Command(resume="ok"), config)
    assert final["notes"] == "fixed in the child"
    assert final["messages"] == [
        "user: hi",
        "child: draft on owls",
        "child: review ok",
        "parent: after, on owls",
    ]


def test_a_key_the_child_merged_its_own_way_is_kept_through_the_pause(durable):
    """The child's write to a key with a callable strategy is its whole value (an
    ``Overwrite``); what its task keeps at the pause is stored as plain data on any saver."""

    def add(old: int | None, new: int) -> int:
        return (old or 0) + new

    child = StateGraph(key_strategies={"tally": add})
    child.add_node("count", lambda s: {"tally": 1})
    child.add_node("ask", lambda s: {"tally": 10, "answer": interrupt("more?")})
    child.add_edge(START, "count").add_edge("count", "ask").add_edge("ask", END)
    parent = StateGraph(key_strategies={"tally": add})
    parent.add_node("sub", child.compile()).add_edge(START, "sub").add_edge("sub", END)
    app = parent.compile(saver=durable)
    config = {"thread_id": "tally"}
    app.invoke({"tally": 100}, config)
    app.update_state(config, {"note": "edited"})
    final = app.invoke(Command(resume="no"), config)
    assert final == {"tally": 111, "answer": "no", "note": "edited"}
