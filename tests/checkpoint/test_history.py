"""History reads (``list``) on every saver: each listed checkpoint is the one ``get`` reads,
whatever ``limit`` and ``before``, across forks, pruning and Redis pages; a caller changing
a listed checkpoint changes nothing else; and the durable savers decode each stored item
once for a whole listing, and nothing that ``limit`` or ``before`` leaves out."""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import fakeredis
import pytest

from checkpoint import (
    BaseCheckpointSaver,
    CheckpointDelta,
    MemorySaver,
    RedisSaver,
    SqliteSaver,
)
from checkpoint.redis import _history as redis_history
from graph_agent import END, START, AssistantMessage, StateGraph, StateSnapshot, UserMessage

from .conftest import SAVERS
from .test_saver_contract import make

DURABLE = ("redis-fake", "redis-real", "sqlite")


@pytest.fixture(params=DURABLE)
def durable_saver(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    return SAVERS[request.param](request)


@pytest.fixture(params=(*DURABLE, "memory"))
def decoding_saver(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    """The savers that decode what they read: the durable ones, and MemorySaver, which keeps
    every checkpoint but the head as the bytes it encoded."""
    return SAVERS[request.param](request)


@contextmanager
def small_pages(size: int = 3) -> Iterator[None]:
    """Redis listings in pages of ``size`` checkpoints, so a short thread spans several."""
    with mock.patch.object(redis_history, "PAGE", size):
        yield


def chat(
    saver: BaseCheckpointSaver, thread: str, turns: int, parent: str | None = None
) -> list[str]:
    """``turns`` turns of two checkpoints each (a user message; the answer, a counter and a
    dict of notes), continuing from ``parent``; the ids written, oldest first."""
    ids: list[str] = []
    base = saver.get(thread, parent) if parent is not None else None
    log = list(base.values["log"]) if base is not None else []
    for turn in range(turns):
        said = UserMessage(f"{thread} {turn}")
        log = [*log, said]
        checkpoint = make(thread, parent, len(ids), {**(base.values if base else {}), "log": log})
        saver.put(
            checkpoint,
            CheckpointDelta(appended={"log": [said]}),
            check_head=parent is None or bool(ids),
        )
        parent = checkpoint.id
        ids.append(parent)
        answer = AssistantMessage(f"answer {turn}")
        notes = {"turn": turn, "seen": [said.text]}
        log = [*log, answer, {"mutable": [turn]}]
        values = {"log": log, "turns": turn + 1, "notes": notes}
        checkpoint = make(thread, parent, len(ids), values)
        saver.put(
            checkpoint,
            CheckpointDelta(
                appended={"log": [answer, {"mutable": [turn]}]},
                replaced={"turns": turn + 1, "notes": notes},
            ),
        )
        base = checkpoint
        parent = checkpoint.id
        ids.append(parent)
    return ids


def assert_listed_as_got(saver: BaseCheckpointSaver, thread: str, **options: Any) -> list[str]:
    listed = list(saver.list(thread, **options))
    for checkpoint in listed:
        assert checkpoint == saver.get(thread, checkpoint.id), checkpoint.id
    return [c.id for c in listed]


# -- the contract (also run on the Redis cluster: tests/checkpoint/test_redis_cluster.py) ------


def test_every_listed_checkpoint_is_the_one_get_reads(any_saver: BaseCheckpointSaver) -> None:
    ids = chat(any_saver, "t", 12)
    newest = ids[::-1]
    with small_pages():
        assert assert_listed_as_got(any_saver, "t") == newest
        assert assert_listed_as_got(any_saver, "t", limit=7) == newest[:7]
        assert assert_listed_as_got(any_saver, "t", limit=3) == newest[:3]
        assert assert_listed_as_got(any_saver, "t", before=ids[15]) == newest[9:]
        assert assert_listed_as_got(any_saver, "t", before=ids[15], limit=4) == newest[9:13]
        assert assert_listed_as_got(any_saver, "t", before=ids[0]) == []
        assert assert_listed_as_got(any_saver, "t", limit=0) == []
        assert assert_listed_as_got(any_saver, "t", before="never") == []
    assert assert_listed_as_got(any_saver, "t") == newest  # one page


def test_forks_list_as_written(any_saver: BaseCheckpointSaver) -> None:
    main = chat(any_saver, "f", 5)
    fork = chat(any_saver, "f", 3, parent=main[3])  # from the answer of the second turn
    again = chat(any_saver, "f", 2, parent=main[-1])  # back on the first line
    written = main + fork + again
    with small_pages():
        assert assert_listed_as_got(any_saver, "f") == written[::-1]
        assert (
            assert_listed_as_got(any_saver, "f", before=fork[-1], limit=8)
            == (written[::-1][len(again) + 1 : len(again) + 9])
        )
    forked = any_saver.get("f", fork[-1])
    assert forked is not None and len(forked.values["log"]) == 2 * 3 + 3 * 3


def test_a_thread_that_started_empty_lists(any_saver: BaseCheckpointSaver) -> None:
    """A run on ``{}`` stores an empty index, which fakeredis's Lua cjson answers as ``[]``
    (an empty table encodes as an array there): history reads it as the empty index it is,
    in sync and async listings, next to checkpoints that hold values."""
    graph = StateGraph()
    graph.add_node("n", lambda state: {"seen": True} if "go" in state else {})
    app = graph.add_edge(START, "n").add_edge("n", END).compile(saver=any_saver)
    config = {"thread_id": "e"}
    app.invoke({}, config)
    empty = [s.checkpoint_id for s in app.get_state_history(config)]
    assert len(empty) == 2  # the input's checkpoint and the node's, both empty
    assert all(dict(s.values) == {} for s in app.get_state_history(config))
    app.invoke({"go": 1}, config)
    with small_pages(1):  # a page for each checkpoint: the empty ones on pages of their own
        history = list(app.get_state_history(config))
    assert [s.checkpoint_id for s in history[2:]] == empty
    assert [dict(s.values) for s in history] == [{"go": 1, "seen": True}, {"go": 1}, {}, {}]
    assert [c.id for c in any_saver.list("e")] == [s.checkpoint_id for s in history]

    async def main() -> list[StateSnapshot]:
        try:
            return [s async for s in app.aget_state_history(config)]
        finally:
            if isinstance(any_saver, RedisSaver):  # its async client closes on its own loop
                await any_saver.aclose()

    assert asyncio.run(main()) == history


def test_changing_a_listed_checkpoint_changes_nothing_else(any_saver: BaseCheckpointSaver) -> None:
    chat(any_saver, "m", 6)
    with small_pages():
        listed = list(any_saver.list("m"))
    before = [copy.deepcopy(dict(c.values)) for c in listed]
    for checkpoint in listed[:7]:  # the same stored items, across pages
        values: Any = checkpoint.values
        values["log"].append("added")
        values["log"][2]["mutable"].append("changed")
        values["notes"]["seen"].append("changed")
        values["notes"]["turn"] = -1
    for checkpoint in listed[:7]:  # each changed once: nothing was shared between them
        values = checkpoint.values
        assert values["log"][-2:] != ["added", "added"] and values["log"][-1] == "added"
        assert values["log"][2]["mutable"] == [0, "changed"]
        assert values["notes"]["seen"][-2:] != ["changed", "changed"]
    for older, was in zip(listed[7:], before[7:]):
        assert dict(older.values) == was
    lists = [id(c.values["log"]) for c in listed]
    assert len(set(lists)) == len(lists)  # every checkpoint its own list
    with small_pages():
        assert [dict(c.values) for c in any_saver.list("m")] == before
    assert dict(any_saver.get("m").values) == before[0]


# -- pruning ----------------------------------------------------------------------------------


def _retaining(name: str, request: pytest.FixtureRequest, keep: int) -> BaseCheckpointSaver:
    if name == "memory":
        return MemorySaver(max_retained=keep)
    if name == "sqlite":
        saver: Any = SqliteSaver(
            request.getfixturevalue("tmp_path") / "kept.sqlite", max_retained=keep
        )
        request.addfinalizer(saver.close)
        return saver  # type: ignore[no-any-return]
    if name == "redis-fake":
        client = fakeredis.FakeRedis()
        request.addfinalizer(client.close)
        return RedisSaver(client, max_retained=keep)
    url = request.getfixturevalue("redis_url")
    saver = RedisSaver.from_url(url, key_prefix=f"t-{uuid.uuid4().hex[:8]}", max_retained=keep)
    request.addfinalizer(saver.close)
    return saver  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", ["memory", *DURABLE])
def test_a_pruned_thread_lists_what_it_kept(name: str, request: pytest.FixtureRequest) -> None:
    saver = _retaining(name, request, keep=7)
    ids = chat(saver, "p", 10)
    kept = ids[::-1][:7]
    with small_pages():
        assert assert_listed_as_got(saver, "p") == kept
        assert assert_listed_as_got(saver, "p", before=kept[2]) == kept[3:]
        assert assert_listed_as_got(saver, "p", before=ids[0]) == []  # pruned: nothing
    oldest = saver.get("p", kept[-1])
    assert oldest is not None and len(oldest.values["log"]) == 3 * 7  # turn 6's answer


@pytest.mark.parametrize("name", ["redis-fake", "redis-real"])
def test_redis_history_ends_where_a_writer_pruned_it_between_pages(
    name: str, request: pytest.FixtureRequest
) -> None:
    saver = _retaining(name, request, keep=25)
    ids = chat(saver, "q", 10)
    with small_pages(3):
        listing = saver.list("q")
        first = [next(listing) for _ in range(3)]  # one page read
        chat(saver, "q", 12, parent=ids[-1])  # 44 writes, 25 kept: ids[0] to ids[18] pruned
        rest = list(listing)  # the next page starts after ids[17], which is gone
    assert [c.id for c in first] == ids[::-1][:3]
    assert rest == []  # everything older went with it
    assert [len(c.values["log"]) for c in first] == [30, 28, 27]
    assert saver.get("q", ids[17]) is None and saver.get("q", ids[19]) is not None


# -- decoding once --------------------------------------------------------------------------


@contextmanager
def counted_loads(saver: BaseCheckpointSaver) -> Iterator[Callable[[], int]]:
    """Counts the saver serializer's ``loads`` calls."""
    serializer: Any = saver.serializer  # type: ignore[attr-defined]
    loads = serializer.loads
    calls = 0

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return loads(*args, **kwargs)

    serializer.loads = counting
    try:
        yield lambda: calls
    finally:
        del serializer.loads


def strings(saver: BaseCheckpointSaver, thread: str, steps: int) -> list[str]:
    """``steps`` checkpoints, each appending one string and replacing a number."""
    ids: list[str] = []
    for step in range(steps):
        checkpoint = make(thread, ids[-1] if ids else None, step, {"log": [], "n": step})
        saver.put(
            checkpoint, CheckpointDelta(appended={"log": [f"item {step}"]}, replaced={"n": step})
        )
        ids.append(checkpoint.id)
    return ids


def test_a_listing_decodes_each_stored_item_once(decoding_saver: BaseCheckpointSaver) -> None:
    durable_saver = decoding_saver
    steps = 60
    ids = strings(durable_saver, "d", steps)
    # Per checkpoint: its header, its value "n" and (SQLite) its index; the list's 60 items
    # once. Decoding each checkpoint's list again would take 60 * 61 / 2 = 1830.
    per_checkpoint = 3
    with counted_loads(durable_saver) as calls:
        listed = list(durable_saver.list("d"))
    assert len(listed) == steps and listed[0].values["log"][-1] == "item 59"
    assert calls() <= steps + per_checkpoint * steps
    with counted_loads(durable_saver) as calls:  # limit: the 5 newest hold all 60 items
        assert len(list(durable_saver.list("d", limit=5))) == 5
    assert calls() <= steps + per_checkpoint * 5  # not 5 * 60
    with counted_loads(durable_saver) as calls:  # before: the 10 oldest hold 10 items
        listed = list(durable_saver.list("d", before=ids[10]))
    assert [c.values["n"] for c in listed] == list(range(9, -1, -1))
    assert calls() <= 10 + per_checkpoint * 10  # not 55 items


def test_a_listing_stops_decoding_where_the_caller_stops(
    decoding_saver: BaseCheckpointSaver,
) -> None:
    durable_saver = decoding_saver
    strings(durable_saver, "s", 30)
    with counted_loads(durable_saver) as calls:
        listing = durable_saver.list("s", before=None)
        newest = next(listing)
        taken = calls()
        listing.close()
    assert newest.values["n"] == 29
    assert taken <= 30 + 2 * 3 + 30  # the newest (its 30 items), plus the indexes SQLite reads


def test_alist_lists_what_list_does(any_saver: BaseCheckpointSaver) -> None:
    ids = chat(any_saver, "a", 6)
    listed = list(any_saver.list("a"))

    async def main() -> list[list[Any]]:
        try:
            with small_pages():
                return [
                    [c async for c in any_saver.alist("a")],
                    [c async for c in any_saver.alist("a", limit=5)],
                    [c async for c in any_saver.alist("a", before=ids[7], limit=4)],
                ]
        finally:
            if isinstance(any_saver, RedisSaver):  # its async client closes on its own loop
                await any_saver.aclose()

    whole, limited, before = asyncio.run(main())
    newest = ids[::-1]
    assert [c.id for c in whole] == newest and whole == listed
    assert [c.id for c in limited] == newest[:5]
    assert [c.id for c in before] == newest[5:9]
