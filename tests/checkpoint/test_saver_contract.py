"""What every saver promises, run on each saver in ``conftest.SAVERS``."""

from __future__ import annotations

import asyncio
from datetime import datetime, time, timedelta, timezone
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from checkpoint import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointConflictError,
    CheckpointDelta,
    RedisSaver,
    created_at_of,
    new_checkpoint_id,
)

from .conftest import SAVERS


@pytest.fixture(params=sorted(SAVERS))
def any_saver(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    """conftest's savers; each factory closes what it opened when its test ends."""
    return SAVERS[request.param](request)


def make(thread: str, parent: str | None, step: int, values: dict, **kw) -> Checkpoint:
    checkpoint_id = new_checkpoint_id()
    return Checkpoint(
        id=checkpoint_id,
        thread_id=thread,
        parent_id=parent,
        step=step,
        next_nodes=kw.pop("next_nodes", ()),
        values=values,
        created_at=created_at_of(checkpoint_id),
        **kw,
    )


def test_ids_sort_by_creation_and_carry_the_time():
    ids = [new_checkpoint_id() for _ in range(1000)]
    assert ids == sorted(ids) and len(set(ids)) == 1000
    age = datetime.now(timezone.utc) - created_at_of(ids[-1])
    assert abs(age.total_seconds()) < 5


def test_put_get_roundtrip_with_deltas(any_saver):
    c1 = make(
        "t",
        None,
        0,
        {"messages": ["a"], "n": 1},
        next_nodes=("model",),
        metadata={"source": "loop"},
    )
    any_saver.put(c1, CheckpointDelta(appended={"messages": ["a"]}, replaced={"n": 1}))
    c2 = make(
        "t",
        c1.id,
        1,
        {"messages": ["a", "b", "c"], "n": 2},
        interrupts=({"id": "i1", "node": "tools", "when": "before", "value": None, "index": 0},),
        resume_values={"ask": ("yes",)},
    )
    any_saver.put(c2, CheckpointDelta(appended={"messages": ["b", "c"]}, replaced={"n": 2}))
    latest = any_saver.get("t")
    assert latest.id == c2.id and latest.parent_id == c1.id and latest.step == 1
    assert dict(latest.values) == {"messages": ["a", "b", "c"], "n": 2}
    assert latest.interrupts[0]["node"] == "tools"
    assert list(latest.resume_values["ask"]) == ["yes"]
    older = any_saver.get("t", c1.id)
    assert dict(older.values) == {"messages": ["a"], "n": 1}
    assert older.next_nodes == ("model",) and older.metadata["source"] == "loop"
    assert older.created_at == c1.created_at
    assert any_saver.get("t", "missing") is None and any_saver.get("other") is None


def test_put_without_delta_stores_full_values(any_saver):
    c1 = make("t", None, 0, {"k": [1, 2]})
    any_saver.put(c1)
    c2 = make("t", c1.id, 1, {"k": [9]})
    any_saver.put(c2)
    assert dict(any_saver.get("t").values) == {"k": [9]}
    assert dict(any_saver.get("t", c1.id).values) == {"k": [1, 2]}


def test_list_newest_first_with_limit_and_before(any_saver):
    parent = None
    ids = []
    for step in range(5):
        checkpoint = make("t", parent, step, {"n": step})
        any_saver.put(checkpoint, CheckpointDelta(replaced={"n": step}))
        parent = checkpoint.id
        ids.append(checkpoint.id)
    assert [c.id for c in any_saver.list("t")] == ids[::-1]
    assert [c.values["n"] for c in any_saver.list("t", limit=2)] == [4, 3]
    assert [c.id for c in any_saver.list("t", before=ids[2])] == [ids[1], ids[0]]
    assert list(any_saver.list("nobody")) == []


def test_head_check_refuses_a_stale_writer_and_writes_nothing(any_saver):
    root = make("t", None, 0, {"n": 0})
    any_saver.put(root)
    winner = make("t", root.id, 1, {"n": 1})
    any_saver.put(winner, CheckpointDelta(replaced={"n": 1}))
    loser = make("t", root.id, 1, {"n": 99})
    with pytest.raises(CheckpointConflictError) as info:
        any_saver.put(loser, CheckpointDelta(replaced={"n": 99}))
    assert info.value.expected_head == root.id and info.value.actual_head == winner.id
    assert any_saver.get("t").id == winner.id
    assert any_saver.get("t", loser.id) is None
    with pytest.raises(CheckpointConflictError):  # a second "first" checkpoint
        any_saver.put(make("t", None, 0, {"n": 0}))


def test_fork_moves_the_head_without_check(any_saver):
    root = make("t", None, 0, {"log": ["a"]})
    any_saver.put(root, CheckpointDelta(appended={"log": ["a"]}))
    main = make("t", root.id, 1, {"log": ["a", "b"]})
    any_saver.put(main, CheckpointDelta(appended={"log": ["b"]}))
    fork = make("t", root.id, 1, {"log": ["a", "x"]})
    any_saver.put(fork, CheckpointDelta(appended={"log": ["x"]}), check_head=False)
    assert any_saver.get("t").id == fork.id
    assert list(any_saver.get("t").values["log"]) == ["a", "x"]
    assert list(any_saver.get("t", main.id).values["log"]) == ["a", "b"]


def test_replaced_append_key_resets_the_list(any_saver):
    root = make("t", None, 0, {"log": [1, 2, 3]})
    any_saver.put(root, CheckpointDelta(appended={"log": [1, 2, 3]}))
    trimmed = make("t", root.id, 1, {"log": [3]})
    any_saver.put(trimmed, CheckpointDelta(replaced={"log": [3]}))
    grown = make("t", trimmed.id, 2, {"log": [3, 4]})
    any_saver.put(grown, CheckpointDelta(appended={"log": [4]}))
    assert list(any_saver.get("t").values["log"]) == [3, 4]


def test_one_step_may_write_thousands_of_keys(any_saver):
    """A step that replaces 5,000 values and appends to 4,500 lists is one write, stored
    whole (Redis's script sends them in chunks: Lua's unpack() has a limit)."""
    values = {f"v{i}": i for i in range(5000)}
    lists = {f"l{i}": [i] for i in range(4500)}
    c1 = make("big", None, 0, {**values, **lists})
    any_saver.put(c1, CheckpointDelta(replaced={**values, **lists}))
    grown = {k: [*v, "more"] for k, v in lists.items()}
    changed = {k: v + 1 for k, v in values.items()}
    c2 = make("big", c1.id, 1, {**changed, **grown})
    appended = {k: ["more"] for k in lists}
    any_saver.put(c2, CheckpointDelta(appended=appended, replaced=changed))
    assert any_saver.get("big").values == {**changed, **grown}
    assert any_saver.get("big", c1.id).values == {**values, **lists}


def test_delete_thread(any_saver):
    any_saver.put(make("t", None, 0, {"n": 1}))
    any_saver.put(make("u", None, 0, {"n": 2}))
    any_saver.delete_thread("t")
    any_saver.delete_thread("never-existed")
    assert any_saver.get("t") is None and list(any_saver.list("t")) == []
    assert any_saver.get("u").values["n"] == 2


def test_async_twins(any_saver):
    async def main():
        root = make("t", None, 0, {"n": 1})
        await any_saver.aput(root, CheckpointDelta(replaced={"n": 1}))
        child = make("t", root.id, 1, {"n": 2})
        await any_saver.aput(child, CheckpointDelta(replaced={"n": 2}))
        latest = await any_saver.aget("t")
        listed = [c.id async for c in any_saver.alist("t", limit=5)]
        await any_saver.adelete_thread("t")
        after = await any_saver.aget("t")
        if isinstance(any_saver, RedisSaver):  # its async client is closed on its own loop
            await any_saver.aclose()
        return latest, listed, after

    latest, listed, after = asyncio.run(main())
    assert latest.values["n"] == 2 and len(listed) == 2 and after is None


def test_values_come_back_as_they_were_put(any_saver):
    paris = ZoneInfo("Europe/Paris")
    values = {
        "when": datetime(2024, 3, 30, 12, tzinfo=paris),
        "alarm": time(7, 30, tzinfo=paris),
        "pairs": [(1, "a"), (2, (3, "b"))],
        "nested": {"k": ((1,), [(), {"t": (4,)}])},
        "big": [2**64, -(2**100)],
        "misc": {"s": {1, 2}, "f": frozenset({"x"}), "d": Decimal("1.50"), "b": b"\x00"},
    }
    root = make("t", None, 0, values)
    any_saver.put(root, CheckpointDelta(appended={"pairs": values["pairs"]}, replaced={
        k: v for k, v in values.items() if k != "pairs"
    }))  # fmt: skip
    got = any_saver.get("t").values
    assert dict(got) == values
    assert got["when"].tzinfo.key == "Europe/Paris" and got["alarm"].tzinfo.key == "Europe/Paris"
    assert (got["when"] + timedelta(days=1)).utcoffset() == timedelta(hours=2)
    assert type(got["pairs"][1][1]) is tuple and type(got["nested"]["k"][1][1]["t"]) is tuple
