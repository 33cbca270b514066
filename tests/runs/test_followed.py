"""A run another process drives, followed from this one (both on one Redis): its follower
reads what the driver writes as it comes, waits as long as the driver holds the run's
thread, and, once the driver is gone (killed: its lease on the thread expired), reads what
was written and stops, instead of waiting for a restart to take the run up."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from checkpoint import RedisSaver
from graph_agent.runs import EVENT, Entry, RedisRunStore, Run, RunService, ThreadOps, _remote


class WatchedSaver(RedisSaver):
    """A ``RedisSaver`` that says each time someone asks who holds a thread's lease."""

    asked: asyncio.Queue[str | None]

    async def alease_holder(self, thread_id: str) -> str | None:
        holder = await super().alease_holder(thread_id)
        self.asked.put_nowait(holder)
        return holder


async def follow(redis_url: str) -> dict[str, Any]:
    prefix = f"f-{uuid.uuid4().hex[:8]}"
    store = RedisRunStore.from_url(redis_url, prefix=f"{prefix}:runs")
    saver = WatchedSaver.from_url(redis_url, key_prefix=prefix)
    assert isinstance(saver, WatchedSaver)
    saver.asked = asyncio.Queue()
    try:
        # what another server's run leaves in Redis: its record, its first event, its lease
        run = Run.new("t1", "agent", {}, {}, "enqueue")
        run.mark("running")
        await store.put_run(run)
        await store.append_events(run.run_id, [Entry("1", EVENT, "first")])
        token = f"elsewhere/{run.run_id}/1"
        assert await saver.aacquire_lease("t1", token, 30)

        here = RunService(store)
        here.saver_of = lambda _: saver
        followed = await here.get(run.run_id)
        assert followed is not None
        read: list[str] = []

        async def reader() -> None:
            async for batch in followed.log.batches():
                read.extend(e.data for e in batch)

        reading = asyncio.create_task(reader())
        joining = asyncio.create_task(here.join(followed))
        await store.append_events(run.run_id, [Entry("2", EVENT, "second")])  # live
        for _ in range(4):  # the driver holds its thread: they go on waiting
            assert await saver.asked.get() == token
        waited = not reading.done() and not joining.done()
        await saver.arelease_lease("t1", token)  # the driver is gone: its lease lapsed
        await asyncio.wait_for(asyncio.gather(reading, joining), 10)
        await here.release()
        return {"waited": waited, "read": read, "status": followed.status}
    finally:
        await store.aclose()
        await saver.aclose()


def test_a_follower_reads_a_run_live_and_stops_once_its_driver_is_gone(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_remote, "BLOCK_SECONDS", 0.05)
    monkeypatch.setattr(_remote, "CHECK_SECONDS", 0.05)
    monkeypatch.setattr(_remote, "GRACE_SECONDS", 0.1)
    got = asyncio.run(follow(redis_url))
    assert got["waited"]
    assert got["read"] == ["first", "second"]
    assert got["status"] == "running"  # as its record says, until a restart takes it up


async def take_up_cancelled(redis_url: str) -> tuple[str, bool]:
    prefix = f"f-{uuid.uuid4().hex[:8]}"
    store = RedisRunStore.from_url(redis_url, prefix=f"{prefix}:runs")
    try:
        # a run its server had accepted, then died; a cancel asked of it on another server
        run = Run.new("t1", "agent", {}, {}, "enqueue")
        await store.put_run(run)
        await store.request_cancel(run.run_id)
        started = asyncio.Event()

        async def execute(run: Run) -> Any:
            started.set()
            run.started.set()  # its input is stored (the service answers then)
            await asyncio.Event().wait()  # (it is stopped)

        async def head() -> str | None:
            return None

        async def restore(checkpoint_id: str | None) -> None:
            return None

        restarted = RunService(store)
        [taken] = await restarted.recover(lambda _: (execute, ThreadOps(head, restore)))
        ran = started.is_set()  # (it is answered once started, or stopped)
        try:
            await asyncio.wait_for(restarted.join(taken), 10)
        finally:
            await restarted.cancel(taken)  # (had it started, it would run on)
            await restarted.release()
        kept = await store.get_run(run.run_id)
        assert kept is not None
        return kept.status, ran or started.is_set()
    finally:
        await store.aclose()


def test_a_cancel_asked_while_no_server_ran_the_run_is_read_when_it_is_taken_up(
    redis_url: str,
) -> None:
    status, ran = asyncio.run(take_up_cancelled(redis_url))
    assert status == "cancelled"
    assert not ran


@asynccontextmanager
async def driven_elsewhere(
    redis_url: str,
) -> AsyncIterator[tuple[RedisRunStore, RedisSaver, Run, str]]:
    """A run another server began and runs (its record, its first event, the lease of its
    thread: the token), on a prefix of its own, when this one starts and takes up the runs
    the store holds as running."""
    prefix = f"f-{uuid.uuid4().hex[:8]}"
    store = RedisRunStore.from_url(redis_url, prefix=f"{prefix}:runs")
    saver = RedisSaver.from_url(redis_url, key_prefix=prefix)
    try:
        run = Run.new("t1", "agent", {}, {}, "enqueue")
        run.mark("running")
        run.began, run.started_at_checkpoint = True, "cp-0"
        await store.put_run(run)
        await store.append_events(run.run_id, [Entry("1", EVENT, "first")])
        token = f"elsewhere/{run.run_id}/1"
        assert await saver.aacquire_lease("t1", token, 30)
        yield store, saver, run, token
    finally:
        await store.aclose()
        await saver.aclose()


async def taken_up_while_driven(redis_url: str) -> dict[str, Any]:
    async with driven_elsewhere(redis_url) as (store, saver, run, token):

        async def execute(run: Run) -> Any:
            raise AssertionError("the run ended where it ran: it is not run again here")

        async def head() -> str | None:
            return None

        async def restore(checkpoint_id: str | None) -> None:
            return None

        here = RunService(store)
        here.saver_of = lambda _: saver
        [taken] = await here.recover(lambda _: (execute, ThreadOps(head, restore, saver)))
        read = await here.get(run.run_id)
        listed = await here.thread_runs("t1")
        assert read is not None
        seen: dict[str, Any] = {
            "status": read.status,
            "followed": isinstance(read.log, _remote.RemoteLog),
            "listed": [(r.run_id, r.status) for r in listed],
        }
        first: list[str] = []
        async for batch in read.log.batches():
            first.extend(e.data for e in batch)
            break
        seen["read"] = first
        # it ends there: its record, the end of its log, its lease let go
        run.mark("success")
        await store.put_run(run)
        await store.end_events(run.run_id)
        await saver.arelease_lease("t1", token)
        await asyncio.wait_for(here.join(taken), 10)
        seen["taken"] = taken.status
        await here.release()
        return seen


def test_a_run_taken_up_while_another_server_runs_it_is_read_as_that_server_s(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server started beside one that runs a run takes the run up, in case that one
    dies; while it waits for the thread, it reads (and would cancel) the run as the other
    server runs it, not its own copy; once the run ended there, its copy takes the record."""
    monkeypatch.setattr(_remote, "BLOCK_SECONDS", 0.05)
    got = asyncio.run(taken_up_while_driven(redis_url))
    assert got["followed"] and got["status"] == "running" and got["read"] == ["first"]
    assert [status for _, status in got["listed"]] == ["running"]
    assert got["taken"] == "success"


class Hearing(RunService):
    """A ``RunService`` that says each cancel it hears from other processes."""

    heard: asyncio.Queue[str]

    async def _heard(self, run_id: str, said: str) -> None:
        await super()._heard(run_id, said)
        self.heard.put_nowait(said)


async def cancelled_while_behind(redis_url: str, *, driver_heeds: bool) -> dict[str, Any]:
    async with driven_elsewhere(redis_url) as (store, saver, run, token):
        ran: list[str] = []
        restored: list[str | None] = []

        async def execute(run: Run) -> Any:
            ran.append(run.run_id)

        async def head() -> str | None:
            return "cp-1"

        async def restore(checkpoint_id: str | None) -> None:
            restored.append(checkpoint_id)

        here = Hearing(store)
        here.heard = asyncio.Queue()
        here.saver_of = lambda _: saver
        [taken] = await here.recover(lambda _: (execute, ThreadOps(head, restore, saver)))
        behind = taken.behind
        await store.request_cancel(run.run_id, rollback=True)  # asked on a third server
        heard = await asyncio.wait_for(here.heard.get(), 10)
        kept = await store.get_run(run.run_id)
        seen: dict[str, Any] = {"behind": behind, "heard": heard, "copy": taken.status}
        seen["record"] = kept.status if kept is not None else None
        if driver_heeds:  # the server that runs it stops it, puts its thread back, ends it
            run.mark("cancelled")
            await store.put_run(run)
            await store.end_events(run.run_id)
        await saver.arelease_lease("t1", token)  # (or it died first: its lease lapsed)
        await asyncio.wait_for(here.join(taken), 10)
        seen.update(taken=taken.status, ran=ran, restored=restored)
        await here.release()
        return seen


@pytest.mark.parametrize("driver_heeds", [True, False])
def test_a_cancel_of_a_run_taken_up_behind_another_server_is_that_server_s_to_heed(
    redis_url: str, driver_heeds: bool
) -> None:
    """While the server that runs it lives, the cancel is its: the copy taken up here does
    not end the run's record early, and takes the record the run ends with there. Had that
    server stopped before it heeded the cancel, the copy reads the cancel once it holds the
    thread: it is not run again, and a rollback puts the thread back here."""
    got = asyncio.run(cancelled_while_behind(redis_url, driver_heeds=driver_heeds))
    assert got["behind"] and got["heard"] == "rollback"
    assert got["copy"] == "pending" and got["record"] == "running"
    assert got["taken"] == "cancelled" and got["ran"] == []
    assert got["restored"] == ([] if driver_heeds else ["cp-0"])
