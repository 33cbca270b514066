"""Every saver against the rules of ``checkpoint/_savers/retention.py``.

``Model`` is those rules, from their text, over a list of writes that each hold full values:
no saver's code is used to predict anything. Each scenario drives a saver and the model with
the same calls, and after each call compares everything a caller can observe of the thread:
the head, ``list`` (newest write first, with every ``before`` and several limits), ``get`` of
each checkpoint held (full values, parent, step, metadata) and of each one dropped (``None``).
Savers: memory (plain and copying), SQLite, Redis on fakeredis and on a real server.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import fakeredis
import pytest

from checkpoint import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointConflictError,
    CheckpointDelta,
    MemorySaver,
    RedisSaver,
    SqliteSaver,
    created_at_of,
    new_checkpoint_id,
)

NAMES = ["memory", "memory-copy", "sqlite", "redis-fake", "redis-real"]


def open_saver(name: str, request: pytest.FixtureRequest, keep: int | None) -> BaseCheckpointSaver:
    """A saver of kind ``name`` with ``max_retained=keep``, closed when the test ends."""
    if name in ("memory", "memory-copy"):
        return MemorySaver(max_retained=keep, copy=name == "memory-copy")
    if name == "sqlite":
        path = request.getfixturevalue("tmp_path") / f"kept-{uuid.uuid4().hex[:8]}.sqlite"
        sqlite = SqliteSaver(path, max_retained=keep)
        request.addfinalizer(sqlite.close)
        return sqlite
    if name == "redis-fake":
        client = fakeredis.FakeRedis()
        request.addfinalizer(client.close)
        return RedisSaver(client, max_retained=keep)
    url = request.getfixturevalue("redis_url")
    redis_saver = RedisSaver.from_url(
        url, key_prefix=f"rc-{uuid.uuid4().hex[:8]}", max_retained=keep
    )
    request.addfinalizer(redis_saver.close)
    return redis_saver


# -- the rules, as a model -------------------------------------------------------------------


def applied(values: Mapping[str, Any], delta: CheckpointDelta) -> dict[str, Any]:
    """``CheckpointDelta``'s meaning: replaced keys take their new value, appended keys get
    their items added to the list they hold (none: an empty one)."""
    out = dict(values)
    out.update(delta.replaced)
    for key, items in delta.appended.items():
        out[key] = [*(out.get(key) or []), *items]
    return out


@dataclasses.dataclass
class Written:
    parent_id: str | None
    step: int
    values: dict[str, Any]
    metadata: dict[str, Any]


class Model:
    """One thread under ``_retention``'s rules."""

    def __init__(self, keep: int | None) -> None:
        self.keep = keep
        self.order: list[str] = []  # the thread's ids, oldest write first
        self.held: dict[str, Written] = {}
        self.forgotten: list[str] = []  # ids written once and held no more

    @property
    def head(self) -> str | None:
        return self.order[-1] if self.order else None  # the head is the newest write

    def values_for(
        self, parent_id: str | None, delta: CheckpointDelta, whole: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Rule 2: what a put stores."""
        if parent_id is None:
            return applied({}, delta)
        if parent_id in self.held:
            return applied(self.held[parent_id].values, delta)
        return dict(whole)

    def put(self, checkpoint: Checkpoint, delta: CheckpointDelta, check_head: bool) -> bool:
        """Rules 1 to 4; ``False``: a conflict, nothing changed."""
        if check_head and self.head != checkpoint.parent_id:
            return False
        values = self.values_for(checkpoint.parent_id, delta, checkpoint.values)
        self.order.append(checkpoint.id)
        self.held[checkpoint.id] = Written(
            checkpoint.parent_id, checkpoint.step, values, dict(checkpoint.metadata)
        )
        while self.keep is not None and len(self.order) > self.keep:
            self.forget(self.order.pop(0))  # the oldest write goes
        return True

    def forget(self, checkpoint_id: str) -> None:
        del self.held[checkpoint_id]
        self.forgotten.append(checkpoint_id)

    def delete(self) -> None:
        for checkpoint_id in self.order:
            self.forget(checkpoint_id)
        self.order = []


# -- driving a saver and the model together --------------------------------------------------


class Run:
    """One saver and the model, one thread, the same calls."""

    def __init__(self, saver: BaseCheckpointSaver, keep: int | None, thread: str = "t") -> None:
        self.saver, self.model, self.thread = saver, Model(keep), thread
        self.count = 0

    def put(
        self,
        parent_id: str | None,
        delta: CheckpointDelta,
        *,
        check_head: bool = True,
        values: Mapping[str, Any] | None = None,
    ) -> str:
        """Write a checkpoint whose ``values`` are what rule 2 gives (or ``values``: for a
        parent the thread does not hold, where they are what is stored); returns its id, and
        checks the saver's answer (written, or ``CheckpointConflictError``)."""
        self.count += 1
        if values is None:
            values = self.model.values_for(parent_id, delta, {})
        parent = self.model.held.get(parent_id) if parent_id is not None else None
        checkpoint_id = new_checkpoint_id()
        checkpoint = Checkpoint(
            id=checkpoint_id,
            thread_id=self.thread,
            parent_id=parent_id,
            step=parent.step + 1 if parent is not None else 0,
            next_nodes=(),
            values=values,
            created_at=created_at_of(checkpoint_id),
            metadata={"write": self.count},
        )
        if self.model.put(checkpoint, delta, check_head):
            self.saver.put(checkpoint, delta, check_head=check_head)
        else:
            with pytest.raises(CheckpointConflictError):
                self.saver.put(checkpoint, delta, check_head=check_head)
        self.check()
        return checkpoint_id

    def delete(self) -> None:
        self.model.delete()
        self.saver.delete_thread(self.thread)
        self.check()

    def check(self) -> None:
        """What the saver shows of the thread is what the model holds."""
        saver, model, thread = self.saver, self.model, self.thread
        newest_first = model.order[::-1]
        head = saver.get(thread)
        assert (head.id if head is not None else None) == model.head
        listed = list(saver.list(thread))
        assert [c.id for c in listed] == newest_first
        for checkpoint in [*listed, *(c for c in [head] if c is not None)]:
            self.check_checkpoint(checkpoint)
        for i, checkpoint_id in enumerate(newest_first):
            got = saver.get(thread, checkpoint_id)
            assert got is not None, f"{checkpoint_id} is held but get() does not find it"
            self.check_checkpoint(got)
            after = [c.id for c in saver.list(thread, before=checkpoint_id)]
            assert after == newest_first[i + 1 :]
        for limit in sorted({0, 1, 2, len(newest_first), len(newest_first) + 1}):
            assert [c.id for c in saver.list(thread, limit=limit)] == newest_first[:limit]
        for checkpoint_id in model.forgotten:
            assert saver.get(thread, checkpoint_id) is None, f"{checkpoint_id} was dropped"
            assert list(saver.list(thread, before=checkpoint_id)) == []

    def check_checkpoint(self, checkpoint: Checkpoint) -> None:
        written = self.model.held[checkpoint.id]
        assert checkpoint.thread_id == self.thread
        assert dict(checkpoint.values) == written.values, checkpoint.id
        assert checkpoint.parent_id == written.parent_id and checkpoint.step == written.step
        assert dict(checkpoint.metadata) == written.metadata


@pytest.fixture(params=NAMES)
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


Opener = Callable[[int | None], Run]


@pytest.fixture
def run(name: str, request: pytest.FixtureRequest) -> Opener:
    """``run(keep)``: a saver of the kind under test with ``max_retained=keep``, and its model."""
    return lambda keep: Run(open_saver(name, request, keep), keep)


def turn(n: int) -> CheckpointDelta:
    """A step: one message appended, a counter replaced."""
    return CheckpointDelta(appended={"log": [f"m{n}"]}, replaced={"n": n})


# -- the scenarios -----------------------------------------------------------------------------


@pytest.mark.parametrize("keep", [None, 1, 2, 3])
def test_linear_puts_keep_the_newest_writes(run: Opener, keep: int | None) -> None:
    r = run(keep)
    parent = None
    for n in range(7):
        parent = r.put(parent, turn(n))
    head = r.saver.get(r.thread)
    assert head is not None and head.values == {"log": [f"m{n}" for n in range(7)], "n": 6}


def test_a_fork_is_the_newest_write_and_old_branches_go_by_age(run: Opener) -> None:
    r = run(3)
    root = r.put(None, turn(0))
    a1 = r.put(root, turn(1))
    r.put(a1, turn(2))
    # a fork from the root: the newest write and the head; the root (its parent) goes
    fork = r.put(root, CheckpointDelta(appended={"log": ["x"]}), check_head=False)
    assert r.model.held[fork].values == {"log": ["m0", "x"], "n": 0}
    # the fork goes on; the old branch is dropped as it ages, the fork's line kept
    f1 = r.put(fork, turn(3))
    r.put(f1, turn(4))
    assert r.model.order == [fork, f1, r.model.head]
    # a fork from a kept checkpoint whose own parent was dropped
    r.put(fork, CheckpointDelta(replaced={"log": ["reset"]}), check_head=False)


def test_a_kept_child_of_a_dropped_parent_keeps_its_full_values(run: Opener) -> None:
    r = run(2)
    root = r.put(None, CheckpointDelta(appended={"log": ["a"]}, replaced={"n": 0, "d": {"k": 1}}))
    child = r.put(root, CheckpointDelta(appended={"log": ["b"]}))
    r.put(child, CheckpointDelta(replaced={"d": {"k": 2}}))  # the root goes; the child stays
    assert r.model.held[child].values == {"log": ["a", "b"], "n": 0, "d": {"k": 1}}
    r.put(r.model.head, CheckpointDelta(appended={"log": ["c"]}))  # and now the child goes


@pytest.mark.parametrize("keep", [1, 2])
def test_a_put_whose_parent_was_dropped_stores_its_values_whole(
    run: Opener, keep: int | None
) -> None:
    r = run(keep)
    root = r.put(None, turn(0))
    parent = root
    for n in range(1, 4):
        parent = r.put(parent, turn(n))
    assert root in r.model.forgotten
    # the delta (one message onto the root's) is not used: checkpoint.values is stored
    whole = {"log": ["m0", "other"], "n": 10, "extra": (1, 2)}
    late = r.put(root, turn(99), check_head=False, values=whole)
    assert r.model.held[late].values == whole
    r.put(late, turn(100))  # and its child extends what it stored
    # a parent the thread never had is the same case
    r.put("0" * 24, turn(5), check_head=False, values={"log": ["fresh"]})


def test_a_conflict_changes_nothing(run: Opener) -> None:
    r = run(2)
    root = r.put(None, turn(0))
    r.put(root, turn(1))
    r.put(root, turn(2))  # stale: the head moved on
    r.put(None, turn(3))  # a second first checkpoint
    dropped = r.put(r.model.head, turn(4))
    assert root in r.model.forgotten and dropped in r.model.held
    r.put(root, turn(5))  # the parent is gone and is not the head: still a conflict


def test_deleting_a_thread_forgets_it(run: Opener) -> None:
    r = run(2)
    root = r.put(None, turn(0))
    old = r.put(root, turn(1))
    r.delete()
    r.delete()  # a thread with nothing: no error
    r.put(old, turn(2))  # check_head: the thread holds nothing, so only a first put goes
    again = r.put(None, CheckpointDelta(appended={"log": ["new"]}))
    assert r.model.held[again].values == {"log": ["new"]}
    r.put(old, turn(3), check_head=False, values={"log": ["forked from the forgotten"]})


def test_retention_and_deletion_stay_within_their_thread(run: Opener) -> None:
    one = run(2)
    other = Run(one.saver, 2, thread="other")
    a = one.put(None, turn(0))
    b = other.put(None, turn(0))
    for n in range(1, 4):
        a = one.put(a, turn(n))
        other.check()
    b = other.put(b, turn(1))
    one.delete()
    other.check()


def test_a_new_first_checkpoint_on_a_thread_that_has_one(run: Opener) -> None:
    r = run(3)
    root = r.put(None, turn(0))
    r.put(root, turn(1))
    restart = r.put(None, CheckpointDelta(replaced={"n": 0}), check_head=False)
    assert r.model.held[restart].values == {"n": 0}  # the delta on an empty state
    r.put(restart, turn(2))


@pytest.mark.parametrize("keep", [None, 1, 2, 3, 5])
def test_random_sequences(run: Opener, keep: int | None) -> None:
    """Linear puts, forks from held, dropped and never-written parents, resets of the list,
    stale writers and deletions, in a seeded random order."""
    rng = random.Random(f"retention-{keep}")
    r = run(keep)
    for n in range(40):
        model = r.model
        choice = rng.random()
        delta = rng.choice(
            [
                turn(n),
                CheckpointDelta(appended={"log": [n, {"at": n}]}),
                CheckpointDelta(replaced={"log": [f"reset {n}"], "d": {"n": n}}),
                CheckpointDelta(replaced={"n": n}),
                CheckpointDelta(appended={"other": [n]}, replaced={"log": []}),
            ]
        )
        if choice < 0.5 or not model.order:
            r.put(model.head, delta)
        elif choice < 0.7:
            r.put(rng.choice(model.order), delta, check_head=False)
        elif choice < 0.8 and model.forgotten:
            parent = rng.choice(model.forgotten)
            r.put(parent, delta, check_head=False, values={"log": [f"whole {n}"], "n": n})
        elif choice < 0.9 and len(model.order) > 1:
            r.put(rng.choice(model.order[:-1]), delta)  # a stale writer: a conflict
        elif choice < 0.95:
            r.put(None, delta, check_head=False)
        else:
            r.delete()
