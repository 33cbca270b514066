"""MemorySaver: incremental storage, limits, copy mode."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from checkpoint import (
    Checkpoint,
    CheckpointDelta,
    MemorySaver,
    SqliteSaver,
    UnserializableValueError,
    created_at_of,
    new_checkpoint_id,
    register_type,
)
from graph_agent import END, START, KeyStrategy, StateGraph

from ._graphs import chat_graph


def test_a_400_message_thread_holds_400_messages_not_every_prefix():
    saver = MemorySaver()
    app = chat_graph(saver)
    config = {"thread_id": "long"}
    held = []
    for turn in range(200):
        app.invoke({"messages": [f"turn {turn}"]}, config)
        held.append(saver.stored_values("long"))
    assert len(app.get_state(config).values["messages"]) == 400
    # each turn adds its 2 messages and 1 replaced 'turns' value, whatever came before
    assert held[-1] == 200 * 3
    assert held[199] - held[198] == held[9] - held[8] == 3
    # full snapshots would hold 2 + 4 + ... + 400 messages
    assert sum(2 * t for t in range(1, 201)) == 40200


def test_bytes_stored_per_turn_stay_flat():
    saver = MemorySaver(copy=True)
    app = chat_graph(saver)
    config = {"thread_id": "bytes"}
    sizes = []
    for turn in range(200):
        app.invoke({"messages": [f"turn {turn:03d}"]}, config)
        sizes.append(saver.stored_bytes("bytes"))
    early = sizes[10] - sizes[9]
    late = sizes[199] - sizes[198]
    assert late <= early * 1.2, (early, late)
    assert len(saver.get("bytes").values["messages"]) == 400


def test_max_threads_forgets_the_least_recently_used():
    saver = MemorySaver(max_threads=2)
    app = chat_graph(saver)
    for thread in ("a", "b"):
        app.invoke({"messages": ["hi"]}, {"thread_id": thread})
    app.get_state({"thread_id": "a"})  # 'a' is now the most recently used
    app.invoke({"messages": ["hi"]}, {"thread_id": "c"})
    assert saver.thread_ids() == ["a", "c"]
    assert app.get_state({"thread_id": "b"}) is None


@pytest.mark.parametrize("copy", [False, True])
def test_max_retained_prunes_old_checkpoints_and_keeps_the_state(copy):
    saver = MemorySaver(max_retained=3, copy=copy)
    app = chat_graph(saver)
    config = {"thread_id": "r"}
    for turn in range(10):
        app.invoke({"messages": [f"turn {turn}"]}, config)
    history = list(app.get_state_history(config))
    assert len(history) == 3
    # each turn is its input's checkpoint (19) and the step's (20)
    assert [len(h.values["messages"]) for h in history] == [20, 19, 18]
    assert app.get_state(config).values["messages"][0] == "turn 0"
    # storage is bounded: one full base (18 messages, 'turns'), then the last turn's input
    # (one message) and its reply (one message, 'turns')
    assert saver.stored_values("r") == 18 + 1 + 1 + 2
    # the oldest kept checkpoint is a full base: replay from it still works
    replayed = app.invoke({"messages": ["again"]}, history[-1].config)
    assert len(replayed["messages"]) == 20


def test_copy_mode_isolates_stored_values_from_mutation():
    saver = MemorySaver(copy=True)
    graph = StateGraph().add_node("n", lambda s: {"data": {"k": [1]}})
    graph.add_edge(START, "n").add_edge("n", END)
    app = graph.compile(saver=saver)
    result = app.invoke({}, {"thread_id": "iso"})
    result["data"]["k"].append(2)  # a careless caller mutates what it got back
    assert app.get_state({"thread_id": "iso"}).values["data"] == {"k": [1]}


def test_copy_mode_names_the_key_path_type_and_node_of_an_unserializable_value():
    class Socketish:
        pass

    saver = MemorySaver(copy=True)
    graph = StateGraph(key_strategies={"messages": KeyStrategy.APPEND})
    graph.add_node("ok", lambda s: {"messages": ["fine"]})
    graph.add_node("leaky", lambda s: {"messages": [{"conn": Socketish()}]})
    graph.add_edge(START, "ok").add_edge("ok", "leaky").add_edge("leaky", END)
    app = graph.compile(saver=saver)
    with pytest.raises(UnserializableValueError) as info:
        app.invoke({"messages": ["hi"]}, {"thread_id": "bad"})
    message = str(info.value)
    assert info.value.key == "messages"
    assert "Socketish" in message and "['conn']" in message
    assert "written by node 'leaky'" in message
    assert "register_type" in message
    state = app.get_state({"thread_id": "bad"})  # the last good checkpoint is intact
    assert state.values["messages"] == ["hi", "fine"] and state.next == ("leaky",)


def test_copy_mode_round_trips_registered_types():
    @register_type
    @dataclasses.dataclass(frozen=True)
    class Order:
        id: int
        items: tuple[str, ...]

    saver = MemorySaver(copy=True)
    graph = StateGraph().add_node("n", lambda s: {"order": Order(7, ("tea",))})
    graph.add_edge(START, "n").add_edge("n", END)
    app = graph.compile(saver=saver)
    app.invoke({}, {"thread_id": "o"})
    stored = app.get_state({"thread_id": "o"}).values["order"]
    assert stored == Order(7, ("tea",)) and stored is not None


def test_limits_are_validated():
    with pytest.raises(ValueError, match="max_threads"):
        MemorySaver(max_threads=0)
    with pytest.raises(ValueError, match="max_retained"):
        MemorySaver(max_retained=-1)


# --- faithful: the same refusals as a durable saver, and no shared mutable state ----------


def _checkpoint(thread: str, parent: str | None, step: int, values: dict, **kw: Any) -> Checkpoint:
    checkpoint_id = new_checkpoint_id()
    return Checkpoint(
        checkpoint_id, thread, parent, step, (), values, created_at_of(checkpoint_id), **kw
    )


class _Socket:
    pass


_BAD_PUTS = {
    "appended item": (
        {"messages": ["hi", {"conn": _Socket()}]},
        CheckpointDelta(appended={"messages": ["hi", {"conn": _Socket()}]}),
        {},
    ),
    "replaced value": (
        {"data": {"a": [1, _Socket()]}},
        CheckpointDelta(replaced={"data": {"a": [1, _Socket()]}}),
        {},
    ),
    "no delta": ({"data": (1, _Socket())}, None, {}),
    "metadata": ({"n": 1}, CheckpointDelta(replaced={"n": 1}), {"metadata": {"s": _Socket()}}),
}


@pytest.mark.parametrize("case", sorted(_BAD_PUTS))
def test_memory_saver_refuses_what_a_durable_saver_refuses_with_the_same_error(
    case: str, tmp_path: Path
) -> None:
    values, delta, extra = _BAD_PUTS[case]
    checkpoint = _checkpoint("bad", None, 0, values, **extra)
    errors = []
    with SqliteSaver(tmp_path / "bad.sqlite") as sqlite:
        for saver in (MemorySaver(), MemorySaver(copy=True), sqlite):
            with pytest.raises(UnserializableValueError) as info:
                saver.put(checkpoint, delta)
            error = info.value
            errors.append((type(error), str(error), error.key, error.path, error.type_name))
            assert saver.get("bad") is None  # nothing was stored
    assert errors[0] == errors[1] == errors[2]
    assert "_Socket" in errors[0][1] and "register_type" in errors[0][1]


def test_default_mode_names_the_key_path_type_and_node_of_an_unserializable_value() -> None:
    graph = StateGraph(key_strategies={"messages": KeyStrategy.APPEND})
    graph.add_node("leaky", lambda s: {"messages": [{"conn": _Socket()}]})
    graph.add_edge(START, "leaky").add_edge("leaky", END)
    app = graph.compile(saver=MemorySaver())
    with pytest.raises(UnserializableValueError) as info:
        app.invoke({"messages": ["hi"]}, {"thread_id": "bad"})
    assert info.value.key == "messages" and info.value.path == "messages['conn']"
    assert "written by node 'leaky'" in str(info.value)
    assert app.get_state({"thread_id": "bad"}).values["messages"] == ["hi"]


def test_a_value_that_cannot_change_is_shared_a_mutable_one_is_copied() -> None:
    @register_type
    @dataclasses.dataclass(frozen=True)
    class Frozen:
        name: str
        tags: tuple[str, ...]

    @register_type
    @dataclasses.dataclass
    class Mutable:
        items: list[int]

    frozen, mutable = Frozen("a", ("x",)), Mutable([1])
    saver = MemorySaver()
    values = {"f": frozen, "m": mutable, "t": (1, "a"), "s": "text", "l": [frozen]}
    saver.put(_checkpoint("t", None, 0, values))
    got = saver.get("t").values
    assert got["f"] is frozen and got["t"] is values["t"] and got["l"][0] is frozen
    assert got["m"] == mutable and got["m"] is not mutable
    assert got["l"] is not values["l"]
    mutable.items.append(2)  # the caller changes what it put
    got["m"].items.append(3)  # and what it got
    assert saver.get("t").values["m"] == Mutable([1])


@pytest.mark.parametrize("copy", [False, True])
def test_nothing_a_caller_does_to_what_it_put_or_got_changes_what_is_stored(copy: bool) -> None:
    saver = MemorySaver(copy=copy)
    messages = ["hi"]
    data = {"k": [1], "seen": {"a"}}
    first = _checkpoint("t", None, 0, {"messages": messages, "data": data}, metadata={"m": [1]})
    saver.put(first, CheckpointDelta(appended={"messages": messages}, replaced={"data": data}))
    messages.append("changed after put")  # mutate what was put
    data["k"].append(2)
    data["seen"].add("b")
    first.metadata["m"].append(2)  # type: ignore[index]
    second = _checkpoint("t", first.id, 1, {"messages": ["hi", "there"], "data": data})
    saver.put(second, CheckpointDelta(appended={"messages": ["there"]}))

    got = saver.get("t")
    got.values["messages"].append("appended by a caller")
    got.values["data"]["k"].append(3)
    got.values["data"]["seen"].clear()
    old = saver.get("t", first.id)
    del old.values["messages"][:]
    old.metadata["m"].append(3)
    for listed in saver.list("t"):
        listed.values["messages"].append("via list")
        listed.values["data"]["k"].clear()

    head = saver.get("t")
    assert head.values == {"messages": ["hi", "there"], "data": {"k": [1], "seen": {"a"}}}
    older = saver.get("t", first.id)
    assert older.values == {"messages": ["hi"], "data": {"k": [1], "seen": {"a"}}}
    assert older.metadata == {"m": [1]}
    assert [c.values["messages"] for c in saver.list("t")] == [["hi", "there"], ["hi"]]


def test_a_graph_result_mutated_by_its_caller_leaves_the_thread_alone() -> None:
    graph = StateGraph(key_strategies={"items": KeyStrategy.APPEND})
    graph.add_node("add", lambda s: {"items": ["x"], "data": {"k": [1]}})
    graph.add_edge(START, "add").add_edge("add", END)
    app = graph.compile(saver=MemorySaver())
    config = {"thread_id": "t"}
    out = app.invoke({"items": []}, config)
    out["items"].append("changed")
    out["data"]["k"].append(2)
    snapshot = app.get_state(config)
    snapshot.values["items"].clear()
    assert app.get_state(config).values == {"items": ["x"], "data": {"k": [1]}}


# --- bounded: max_threads evicts the least recently used thread -----------------------------


def test_max_threads_counts_reads_through_list_and_the_async_twins() -> None:
    saver = MemorySaver(max_threads=3)
    for thread in ("a", "b", "c"):
        saver.put(_checkpoint(thread, None, 0, {"n": 1}))
    list(saver.list("a"))  # a read: "a" is the most recently used
    asyncio.run(saver.aget("b"))  # so is "b" now
    saver.put(_checkpoint("d", None, 0, {"n": 1}))  # a fourth thread: "c" goes
    assert saver.thread_ids() == ["a", "b", "d"]
    assert saver.get("c") is None

    async def touch() -> None:
        async for _ in saver.alist("a"):
            pass

    asyncio.run(touch())
    saver.put(_checkpoint("e", None, 0, {"n": 1}))
    assert saver.thread_ids() == ["d", "a", "e"]


def test_threads_are_unbounded_by_default() -> None:
    saver = MemorySaver()
    for n in range(2000):
        saver.put(_checkpoint(f"t{n}", None, 0, {"n": n}))
    assert len(saver.thread_ids()) == 2000 and saver.get("t0").values == {"n": 0}
