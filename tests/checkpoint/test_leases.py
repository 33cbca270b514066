"""Leases per thread and fenced writes, on every saver in ``conftest.SAVERS`` (memory, SQLite,
Redis on fakeredis and on a real server; ``test_leases_cluster.py`` runs the same checks on
a three-node Redis Cluster). docs/checkpoints.md, "Leases and fencing"."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from checkpoint import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointDelta,
    CheckpointError,
    LeaseLostError,
    MemorySaver,
    RedisSaver,
    SqliteSaver,
    supports_leases,
)

from .conftest import SAVERS
from .test_saver_contract import make


@pytest.fixture(params=sorted(SAVERS))
def any_saver(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    return SAVERS[request.param](request)


def wait_expired(saver: BaseCheckpointSaver, thread: str, timeout: float = 10.0) -> None:
    """Wait until the thread's lease has expired (the event itself: no holder any more)."""
    deadline = time.monotonic() + timeout
    while saver.lease_holder(thread) is not None:
        assert time.monotonic() < deadline, f"the lease of {thread!r} never expired"
        time.sleep(0.01)


def _root(saver: BaseCheckpointSaver, thread: str) -> Checkpoint:
    root = make(thread, None, 0, {"log": ["a"], "n": 1}, next_nodes=("x",))
    saver.put(root, CheckpointDelta(appended={"log": ["a"]}, replaced={"n": 1}))
    return root


def _child(parent: Checkpoint, item: str) -> tuple[Checkpoint, CheckpointDelta]:
    values = {"log": [*parent.values["log"], item], "n": parent.values["n"] + 1}
    child = make(parent.thread_id, parent.id, parent.step + 1, values)
    return child, CheckpointDelta(appended={"log": [item]}, replaced={"n": values["n"]})


def _with_writes(checkpoint: Checkpoint) -> Checkpoint:
    return dataclasses.replace(checkpoint, pending_writes={"task-1": ["x", {"log": ["w"]}, None]})


# -- the checks, each on one saver (test_leases_cluster runs them on the cluster too) -----------


def check_acquire_renew_release(saver: BaseCheckpointSaver) -> None:
    assert supports_leases(saver)
    assert saver.lease_holder("t") is None
    assert saver.acquire_lease("t", "worker-1/run-1/1", 30)
    assert saver.lease_holder("t") == "worker-1/run-1/1"
    assert saver.acquire_lease("t", "worker-1/run-1/1", 30)  # already its own: extended
    assert not saver.acquire_lease("t", "worker-2/run-1/2", 30)  # another's: refused
    assert saver.lease_holder("t") == "worker-1/run-1/1"
    assert saver.renew_lease("t", "worker-1/run-1/1", 30)
    assert not saver.renew_lease("t", "worker-2/run-1/2", 30)
    saver.release_lease("t", "worker-2/run-1/2")  # not its own: nothing happens
    assert saver.lease_holder("t") == "worker-1/run-1/1"
    assert saver.lease_holder("other") is None  # leases are per thread
    assert saver.acquire_lease("other", "worker-2/run-9/1", 30)
    saver.release_lease("t", "worker-1/run-1/1")
    assert saver.lease_holder("t") is None
    assert not saver.renew_lease("t", "worker-1/run-1/1", 30)  # gone: cannot be renewed
    assert saver.acquire_lease("t", "worker-2/run-1/2", 30)
    assert saver.lease_holder("other") == "worker-2/run-9/1"


def check_a_lease_expires(saver: BaseCheckpointSaver) -> None:
    assert saver.acquire_lease("t", "first", 30)
    assert saver.renew_lease("t", "first", 0.1)  # its last renewal, a short one
    wait_expired(saver, "t")
    assert not saver.renew_lease("t", "first", 30)  # expired: gone
    assert saver.acquire_lease("t", "second", 30)
    assert saver.lease_holder("t") == "second"


def check_a_stale_token_writes_nothing(saver: BaseCheckpointSaver) -> None:
    root = _root(saver, "t")
    assert saver.acquire_lease("t", "first", 0.2)
    wait_expired(saver, "t")
    # Expired and no one holds it: refused.
    child, delta = _child(root, "b")
    with pytest.raises(LeaseLostError) as lost:
        saver.put(child, delta, fence="first")
    assert (lost.value.thread_id, lost.value.token, lost.value.holder) == ("t", "first", None)
    message = str(lost.value)
    assert "thread 't'" in message and "expired" in message and "must stop" in message
    # Another worker holds it now: refused, naming the holder.
    assert saver.acquire_lease("t", "second", 30)
    with pytest.raises(LeaseLostError) as lost:
        saver.put(child, delta, fence="first")
    assert lost.value.holder == "second" and "'second'" in str(lost.value)
    assert "another worker owns the thread" in str(lost.value)
    with pytest.raises(LeaseLostError):
        saver.put(child, delta, check_head=False, fence="first")
    with pytest.raises(LeaseLostError):
        saver.put_writes(_with_writes(root), fence="first")
    # Nothing of it was written: the head, the history and the record are as they were.
    head = saver.get("t")
    assert head is not None and head.id == root.id and head.pending_writes == {}
    assert dict(head.values) == {"log": ["a"], "n": 1}
    assert [c.id for c in saver.list("t")] == [root.id]
    assert saver.lease_holder("t") == "second"
    assert not isinstance(lost.value, type(None)) and isinstance(lost.value, CheckpointError)


def check_the_live_token_writes(saver: BaseCheckpointSaver) -> None:
    assert saver.acquire_lease("t", "mine", 30)
    first = make("t", None, 0, {"log": ["a"], "n": 1}, next_nodes=("x",))
    saver.put(first, CheckpointDelta(appended={"log": ["a"]}, replaced={"n": 1}), fence="mine")
    saver.put_writes(_with_writes(first), fence="mine")
    assert saver.get("t").pending_writes == {"task-1": ["x", {"log": ["w"]}, None]}
    child, delta = _child(first, "b")
    saver.put(child, delta, fence="mine")
    head = saver.get("t")
    assert head is not None and head.id == child.id
    assert dict(head.values) == {"log": ["a", "b"], "n": 2}


def check_a_write_without_fence_is_unaffected(saver: BaseCheckpointSaver) -> None:
    root = _root(saver, "t")  # no lease at all
    assert saver.acquire_lease("t", "someone", 30)
    child, delta = _child(root, "b")
    saver.put(child, delta)  # another's lease: an unfenced write does not look at it
    saver.put_writes(_with_writes(child))
    head = saver.get("t")
    assert head is not None and head.id == child.id and head.pending_writes
    assert saver.lease_holder("t") == "someone"


def check_the_head_is_still_checked(saver: BaseCheckpointSaver) -> None:
    from checkpoint import CheckpointConflictError

    root = _root(saver, "t")
    assert saver.acquire_lease("t", "mine", 30)
    child, delta = _child(root, "b")
    saver.put(child, delta, fence="mine")
    stale, stale_delta = _child(root, "x")
    with pytest.raises(CheckpointConflictError):  # the lease is right, the head moved
        saver.put(stale, stale_delta, fence="mine")
    assert saver.get("t").id == child.id


CHECKS: list[Callable[[BaseCheckpointSaver], None]] = [
    check_acquire_renew_release,
    check_a_lease_expires,
    check_a_stale_token_writes_nothing,
    check_the_live_token_writes,
    check_a_write_without_fence_is_unaffected,
    check_the_head_is_still_checked,
]


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__.removeprefix("check_") for c in CHECKS])
def test_leases(any_saver: BaseCheckpointSaver, check: Callable[[BaseCheckpointSaver], None]):
    check(any_saver)


def test_async_twins(any_saver: BaseCheckpointSaver) -> None:
    saver = any_saver

    async def main() -> None:
        try:
            assert await saver.aacquire_lease("t", "first", 30)
            assert not await saver.aacquire_lease("t", "second", 30)
            assert await saver.alease_holder("t") == "first"
            root = make("t", None, 0, {"log": ["a"], "n": 1}, next_nodes=("x",))
            await saver.aput(root, CheckpointDelta.full(root.values), fence="first")
            await saver.aput_writes(_with_writes(root), fence="first")
            assert await saver.arenew_lease("t", "first", 0.1)  # a short last renewal
            while await saver.alease_holder("t") is not None:
                await asyncio.sleep(0.01)  # waits for the expiry itself
            assert not await saver.arenew_lease("t", "first", 30)
            assert await saver.aacquire_lease("t", "second", 30)
            child, delta = _child(root, "b")
            with pytest.raises(LeaseLostError):
                await saver.aput(child, delta, fence="first")
            with pytest.raises(LeaseLostError):
                await saver.aput_writes(_with_writes(root), fence="first")
            await saver.aput(child, delta, fence="second")
            await saver.arelease_lease("t", "first")
            assert await saver.alease_holder("t") == "second"
            await saver.arelease_lease("t", "second")
            assert await saver.alease_holder("t") is None
            assert (await saver.aget("t")).id == child.id
        finally:
            if isinstance(saver, RedisSaver):
                await saver.aclose()

    asyncio.run(main())


@pytest.mark.parametrize(
    ("call", "error", "says"),
    [
        (lambda s: s.acquire_lease("", "tok", 1), TypeError, "acquire_lease(thread_id=...)"),
        (lambda s: s.acquire_lease("t", "", 1), TypeError, "acquire_lease(token=...)"),
        (lambda s: s.renew_lease("t", None, 1), TypeError, "renew_lease(token=...)"),
        (lambda s: s.acquire_lease("t", "tok", 0), ValueError, "positive number of seconds"),
        (lambda s: s.renew_lease("t", "tok", float("inf")), ValueError, "ttl_seconds"),
        (lambda s: s.acquire_lease("t", "tok", True), ValueError, "ttl_seconds"),
        (lambda s: s.lease_holder(3), TypeError, "lease_holder(thread_id=...)"),
        (lambda s: s.release_lease("t", 7), TypeError, "release_lease(token=...)"),
        (lambda s: s.put(make("t", None, 0, {}), fence=""), TypeError, "put(fence=...)"),
    ],
    ids=[
        "thread",
        "token",
        "renew-token",
        "ttl-zero",
        "ttl-inf",
        "ttl-bool",
        "holder",
        "release",
        "fence",
    ],
)
def test_bad_arguments_say_what_and_how(
    any_saver: BaseCheckpointSaver, call: Any, error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=None) as raised:
        call(any_saver)
    assert says in str(raised.value)


def test_a_lease_is_shared_by_the_savers_on_one_sqlite_file(tmp_path: Path) -> None:
    """Two savers on one file (two processes' view): one's lease fences the other's writes,
    in the write's own transaction."""
    path = tmp_path / "shared.sqlite"
    with SqliteSaver(path) as first, SqliteSaver(path) as second:
        root = _root(first, "t")
        assert first.acquire_lease("t", "first", 30)
        assert not second.acquire_lease("t", "second", 30)
        assert first.renew_lease("t", "first", 0.1)
        wait_expired(second, "t")
        assert second.acquire_lease("t", "second", 30)
        child, delta = _child(root, "b")
        with pytest.raises(LeaseLostError):
            first.put(child, delta, fence="first")
        second.put(child, delta, fence="second")
        assert first.get("t").id == child.id


def test_an_older_sqlite_file_gets_the_lease_table(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite"
    with SqliteSaver(path) as saver:
        _root(saver, "t")
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE leases")  # a file made before leases existed
    db.close()
    with SqliteSaver(path) as saver:
        assert saver.get("t") is not None
        assert saver.acquire_lease("t", "mine", 30)
        assert saver.lease_holder("t") == "mine"


def test_a_memory_savers_leases_outlive_max_threads() -> None:
    saver = MemorySaver(max_threads=1)
    assert saver.acquire_lease("a", "mine", 30)
    _root(saver, "a")
    _root(saver, "b")  # drops thread a's checkpoints, not its lease
    assert saver.get("a") is None and saver.lease_holder("a") == "mine"


def test_a_savers_without_leases_say_so() -> None:
    class Plain(BaseCheckpointSaver):
        def put(self, checkpoint: Any, delta: Any = None, *, check_head: bool = True) -> None: ...
        def get(self, thread_id: str, checkpoint_id: str | None = None) -> None: ...
        def list(self, thread_id: str, **kw: Any) -> Any:
            return iter(())

        def delete_thread(self, thread_id: str) -> None: ...

    assert not supports_leases(Plain()) and not supports_leases(None)
    with pytest.raises(NotImplementedError, match="Plain does not keep leases"):
        Plain().acquire_lease("t", "tok", 1)


def test_a_fenced_redis_write_is_one_script_call(real_redis: Any) -> None:
    """The lease is checked in the write's own script: one call per write, as unfenced."""
    saver = RedisSaver(real_redis, key_prefix="fence-trips")
    try:
        root = _root(saver, "t")
        assert saver.acquire_lease("t", "mine", 30)
        child, delta = _child(root, "b")
        real_redis.config_resetstat()
        saver.put(child, delta, fence="mine")
        saver.put_writes(_with_writes(child), fence="mine")
        stats = real_redis.info("commandstats")
        calls = {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}
        assert calls.get("evalsha", 0) + calls.get("eval", 0) == 2, calls
        assert saver.lease_key("t") == "fence-trips:{t}:lease"
        assert saver.lease_key("t") not in saver.keys("t")  # not a checkpoint key
    finally:
        saver.delete_thread("t")
        real_redis.delete(saver.lease_key("t"))
