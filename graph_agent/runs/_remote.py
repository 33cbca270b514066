"""A run that another process drives (a worker, or another server on the same Redis), as a
server follows it: its log's entries come from the store (a Redis Stream) as the driver
writes them, and its end from the run's record.

A driver that stops without ending the run (killed) leaves its record ``running`` until a
process on the store takes the run up (a server's restart: ``RunService.recover``; a worker
the queue hands it to again). A follower is not left waiting for that: ``over()`` tells it
when the run no longer moves (its record ended without its log's end mark, or its driver
let its thread's lease expire), and the follower stops there."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from ._log import Entry
from .records import Run

__all__ = ["DriverWatch", "RemoteLog", "join_remote"]

BLOCK_SECONDS = 1.0  # how long one read waits for the driver's next event
CHECK_SECONDS = 2.0  # how often a quiet follower asks whether the run still moves
# how long a thread may stand without a lease while its run's driver lives (between one run
# releasing it and the next taking it, between a run's end and its record's)
GRACE_SECONDS = 1.0

# Whether the run no longer moves: its record ended, or its driver stopped.
Over = Callable[[], Awaitable[bool]]


class RemoteLog:
    """The entries of a run that another process drives, read from ``store`` (a
    ``RedisRunStore``), with the reading interface of ``RunLog``; with ``over``, a reader
    stops once the run no longer moves (asked after ``CHECK_SECONDS`` without an entry)."""

    def __init__(self, store: Any, run_id: str, over: Over | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self.over = over

    async def batches(
        self, after: int = 0, *, idle: float | None = None
    ) -> AsyncIterator[list[Entry]]:
        """Every entry after the first ``after`` as the driver writes it, until the run's
        log ends (or the run no longer moves); with ``idle``, an empty list each ``idle``
        seconds without an entry."""
        position = after
        quiet_since = checked = time.monotonic()
        while True:
            wait = BLOCK_SECONDS if idle is None else min(idle, BLOCK_SECONDS)
            fresh, ended = await self.store.follow_events(self.run_id, position, wait)
            moment = time.monotonic()
            if fresh:
                position = int(fresh[-1].id)
                quiet_since = checked = moment
                yield fresh
            elif idle is not None and moment - quiet_since >= idle:
                quiet_since = moment
                yield []
            if ended:
                return
            if self.over is not None and not fresh and moment - checked >= CHECK_SECONDS:
                checked = moment
                if await self.over():  # what was written before it stopped, then the end
                    last, _ = await self.store.follow_events(self.run_id, position, 0.001)
                    if last:
                        yield last
                    return

    async def wait_ended(self) -> None:
        """Until the run's log has ended."""
        async for _ in self.batches():
            pass


class DriverWatch:
    """Whether the process that drives a run on ``thread_id`` stopped: its thread has had no
    lease on ``saver`` for ``GRACE_SECONDS`` (a live driver renews it off its event loop; a
    killed one's expires). Asked at most each ``CHECK_SECONDS``; never says so for a saver
    without leases (there is nothing to tell it by)."""

    def __init__(self, saver: Any, thread_id: str) -> None:
        self.saver = saver
        self.thread_id = thread_id
        self._asked = 0.0
        self._free_since: float | None = None  # when the thread was first seen unleased

    async def stopped(self) -> bool:
        moment = time.monotonic()
        if self.saver is None or moment - self._asked < CHECK_SECONDS:
            return False
        self._asked = moment
        if await self.saver.alease_holder(self.thread_id) is not None:
            self._free_since = None
            return False
        if self._free_since is None:
            self._free_since = moment
            return False
        return moment - self._free_since >= GRACE_SECONDS


async def join_remote(store: Any, run: Run, watch: DriverWatch | None = None) -> bool:
    """Until ``run``'s record says it ended (then ``run`` takes its status, output and
    error, and is done), or ``watch`` says its driver stopped; whether it ended."""
    position = "0-0"
    while True:
        fresh = await store.get_run(run.run_id)
        if fresh is None or not fresh.active:
            if fresh is not None:
                run.status, run.output, run.error = fresh.status, fresh.output, fresh.error
                run.updated_at = fresh.updated_at
            run.done.set()
            return True
        if watch is not None and await watch.stopped():
            return False
        # the log's end is written after the record: read the record again then (or
        # after a second, for a run whose log its driver could not end)
        position, _ = await store.follow_end(run.run_id, position, BLOCK_SECONDS)
