"""``QueuedRunService``: the runs service of a server whose runs are run by workers
(``graph-agent serve --queue redis://...``). The server records each run in Redis and
queues its id; a worker (``graph-agent worker``) runs it and writes its events to the run's
Redis Stream, which any server reads; a cancel sent to any server reaches the worker that
runs the run (published on Redis)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ._redis import RedisRunStore
from ._remote import DriverWatch
from .records import Run, next_in_turn
from .service import Execute, RunService, ThreadOps

__all__ = ["QueuedRunService"]

POLL_SECONDS = 0.05  # how often a cancel with wait reads the run's record


class QueuedRunService(RunService):
    """Runs recorded in ``store`` and handed to workers through ``submit(run_id)`` (the
    queue); nothing runs in this process."""

    def __init__(
        self,
        store: RedisRunStore,
        submit: Callable[[str], Awaitable[None]],
        **options: Any,
    ) -> None:
        super().__init__(store, **options)
        self.redis = store
        self.submit = submit

    def _watch(self, run: Run) -> DriverWatch | None:
        return None  # a run whose worker stopped is handed to another worker: followed on

    async def get(self, run_id: str) -> Run | None:
        run = await self.store.get_run(run_id)
        return self._follow(run) if run is not None else None

    async def thread_runs(self, thread_id: str) -> list[Run]:
        return [self._follow(r) for r in await self.store.thread_runs(thread_id)]

    async def _begin(self, run: Run, execute: Execute, thread: ThreadOps) -> Run:
        """Queue ``run`` when its turn comes (``submit_next``): a worker runs it."""
        await self.submit_next(run.thread_id)
        return self._follow(run)

    async def submit_next(self, thread_id: str) -> None:
        """Queue the thread's oldest pending run if no run of the thread is running: a run
        is queued only when its turn comes, so no worker waits on a thread with a run
        queued behind it (the worker that ends a run queues the thread's next one). Recorded
        first, then read: of a server accepting a run and a worker ending the one before it,
        one at least sees the other's record (a run queued twice runs once)."""
        run_id = next_in_turn(await self.store.thread_runs(thread_id))
        if run_id is not None:
            await self.submit(run_id)

    async def _cancel_remote(self, run: Run, *, rollback: bool, wait: bool) -> None:
        """Ask the worker that runs ``run`` to stop it (a queued run is marked cancelled and
        never starts); with ``wait``, until its record says it ended."""
        await self.redis.request_cancel(run.run_id, rollback=rollback)
        if run.status == "pending":  # no worker has it: it never starts (a worker that
            run.mark("cancelled")  # takes it up reads the request first)
            await self.store.put_run(run)
            await self.redis.end_events(run.run_id)
            await self.submit_next(run.thread_id)
        if wait:
            await self.join(run)

    async def release(self) -> None:
        await super().release()
        close = getattr(self.submit, "__self__", None)  # the queue ``submit`` belongs to
        if close is not None and hasattr(close, "aclose"):
            await close.aclose()

    async def recover(self, plan: Callable[[Run], tuple[Execute, ThreadOps] | None]) -> list[Run]:
        """Queue again the runs whose turn came while no one queued them (a server that
        stopped between recording a run and queueing it); workers take up the runs of a
        worker that stopped."""
        for thread_id in {r.thread_id for r in await self.store.active_runs()}:
            await self.submit_next(thread_id)
        return []
