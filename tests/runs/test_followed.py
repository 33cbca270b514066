"""A run another process drives, followed from this one (both on one Redis): its follower
reads what the driver writes as it comes, waits as long as the driver holds the run's
thread, and, once the driver is gone (killed: its lease on the thread expired), reads what
was written and stops, instead of waiting for a restart to take the run up."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from checkpoint import RedisSaver
from graph_agent.runs import EVENT, Entry, RedisRunStore, Run, RunService, _remote


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
