"""MemorySaver: incremental storage, limits, copy mode."""

from __future__ import annotations

import dataclasses

import pytest

from checkpoint import MemorySaver, UnserializableValueError, register_type
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
