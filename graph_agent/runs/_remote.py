"""A run's log as a server reads it when another process runs the run (a worker): its
entries come from the store (a Redis Stream) as the worker writes them."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from ._log import Entry

__all__ = ["RemoteLog"]

BLOCK_SECONDS = 1.0  # how long one read waits for the worker's next event


class RemoteLog:
    """The entries of a run that another process drives, read from ``store`` (a
    ``RedisRunStore``), with the reading interface of ``RunLog``."""

    def __init__(self, store: Any, run_id: str) -> None:
        self.store = store
        self.run_id = run_id

    async def batches(
        self, after: int = 0, *, idle: float | None = None
    ) -> AsyncIterator[list[Entry]]:
        """Every entry after the first ``after`` as the worker writes it, until the run's
        log ends; with ``idle``, an empty list each ``idle`` seconds without an entry."""
        position = after
        quiet_since = time.monotonic()
        while True:
            wait = BLOCK_SECONDS if idle is None else min(idle, BLOCK_SECONDS)
            fresh, ended = await self.store.follow_events(self.run_id, position, wait)
            if fresh:
                position = int(fresh[-1].id)
                quiet_since = time.monotonic()
                yield fresh
            elif idle is not None and time.monotonic() - quiet_since >= idle:
                quiet_since = time.monotonic()
                yield []
            if ended:
                return

    async def wait_ended(self) -> None:
        """Until the run's log has ended."""
        async for _ in self.batches():
            pass
