"""``RunWorker``: runs the runs a server queued (``graph-agent worker``), any number of them
in as many processes on as many machines, on one Redis.

For each run id the queue hands it, a worker waits for the run's turn on its thread (the
oldest run still pending or running there), holds the thread's lease for it (renewed off
the event loop: ``LeaseKeeper``), and runs it with every checkpoint write fenced by the
lease's token, writing its events to the run's Redis Stream as they come. A run whose
worker died (its lease expired) is taken up again by the next worker the queue hands it to,
with its attempt + 1, from the thread's last checkpoint; after ``max_attempts`` it ends as
``error`` with the reason. A worker paused past its lease and resumed cannot write: its next
checkpoint write is refused (``LeaseLostError``), and it records nothing of the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import redis

from checkpoint import LeaseLostError

from ._lease import LeaseKeeper
from ._log import FAILURE, Entry, RunLog
from ._redis import RedisRunStore
from .errors import RunDrained
from .records import ACTIVE, Run, next_in_turn
from .service import Execute, RunService, ThreadOps

__all__ = ["RunWorker"]

TURN_POLL_SECONDS = 0.05  # how often a run waiting for its thread looks again


class RunWorker(RunService):
    """Runs queued runs: ``await handle(run_id)`` for each id the queue hands it, with
    ``listen_for_cancels()`` running beside (a cancel asked of any server stops the run
    here within a second).

    ``driver_of(run, lease)`` says how to drive a run (``None``: its assistant is not served
    by this worker), ``saver_of(run)`` which saver keeps its thread (where its lease is)."""

    def __init__(
        self,
        store: RedisRunStore,
        driver_of: Callable[[Run, str | None], tuple[Execute, ThreadOps] | None],
        saver_of: Callable[[Run], Any],
        *,
        name: str | None = None,
        lease_seconds: float = 30.0,
        max_attempts: int = 3,
        requeue: Callable[[str], Awaitable[None]] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(store, **options)
        self.redis = store
        self.driver_of = driver_of
        self.saver_of = saver_of
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.lease_seconds = lease_seconds
        self.max_attempts = max_attempts
        self.requeue = requeue
        self._keepers: dict[str, LeaseKeeper] = {}
        self._requeues: set[asyncio.Future[None]] = set()

    def _stolen(self, error: BaseException) -> bool:
        return isinstance(error, LeaseLostError)

    async def handle(self, run_id: str) -> None:
        """Run ``run_id`` to its end, or as far as this worker may (see the module)."""
        run = await self.store.get_run(run_id)
        if run is None or not run.active:
            return  # deleted, or ended (a cancel of a queued run, a duplicate delivery)
        saver = self.saver_of(run) if self.saver_of is not None else None
        if saver is None:
            await self._end_unserved(run)
            return
        keeper = await self._turn(run, saver)
        if keeper is None:
            return
        try:
            await self._run_leased(run_id, keeper)
        finally:
            await asyncio.to_thread(keeper.release)

    async def _turn(self, run: Run, saver: Any) -> LeaseKeeper | None:
        """Wait until ``run`` is the oldest active run of its thread and this worker holds
        the thread's lease for it; ``None`` if the run ended meanwhile."""
        while True:
            ahead = [r for r in await self.store.thread_runs(run.thread_id) if r.status in ACTIVE]
            if not any(r.run_id == run.run_id for r in ahead):
                return None  # ended (cancelled while queued) or deleted
            oldest = min(ahead, key=lambda r: r.created_at)
            if oldest.run_id == run.run_id:
                token = f"{self.name}/{run.run_id}/{uuid.uuid4().hex[:8]}"
                keeper = LeaseKeeper(saver, run.thread_id, token, self.lease_seconds)
                if await asyncio.to_thread(keeper.acquire):
                    return keeper
            await asyncio.sleep(TURN_POLL_SECONDS)

    async def _run_leased(self, run_id: str, keeper: LeaseKeeper) -> None:
        run = await self.store.get_run(run_id)  # read again: the lease is ours now
        if run is None or not run.active:
            return
        said = await self.redis.cancel_requested(run_id)
        if said is not None:
            run.mark("cancelled")
            await self._close(run, keeper)
            return
        if run.status == "running":  # its worker stopped: taken up again
            run.attempt += 1
        if run.attempt > self.max_attempts:
            why = (
                f"the run was taken up {self.max_attempts} times and its worker stopped each "
                "time (its thread's lease expired); it is not tried again"
            )
            self.logger.error("run %s on thread %s: %s", run.run_id, run.thread_id, why)
            await self._fail(run, why)
            await self._close(run, keeper)
            return
        how = self.driver_of(run, keeper.token)
        if how is None:
            await self._end_unserved(run)
            return
        execute, thread = how
        kept = await self.store.events(run_id)
        run.log = RunLog(kept, sink=self._fenced_sink(run, keeper), background=True)
        inner = asyncio.create_task(self._run_once(run, execute, thread))
        run.task = inner
        self.live[run_id] = run
        self._keepers[run_id] = keeper
        keeper.on_lost = lambda _: self._loop_call(run)
        said = await self.redis.cancel_requested(run_id)  # asked before it was live here
        if said is not None:
            run.rolled_back = said == "rollback"
            inner.cancel()
        try:
            await inner
        except RunDrained:
            await self._requeue(run, keeper)
            return
        except asyncio.CancelledError:
            if not inner.done():  # this worker stops (SIGTERM): the run goes back to the queue
                inner.cancel()
                with contextlib.suppress(asyncio.CancelledError, LeaseLostError):
                    await inner
                await self._requeue(run, keeper)
                raise
            if keeper.lost.is_set():
                self._say_lost(run)
                return
            await self._close(run, keeper)  # a cancel asked by a client: cancelled
            return
        except LeaseLostError:
            self._say_lost(run)
            return
        finally:
            self.live.pop(run_id, None)
            self._keepers.pop(run_id, None)
        await self._close(run, keeper)

    async def _requeue(self, run: Run, keeper: LeaseKeeper) -> None:
        """Give a run this worker stops back to the queue, to go on from its thread's last
        checkpoint (its attempt unchanged: no worker died)."""
        if not keeper.held:
            return
        run.mark("pending")
        await run.log.flush() if isinstance(run.log, RunLog) else None
        await self.store.put_run(run)
        await asyncio.to_thread(keeper.release)
        if self.requeue is not None:
            await self.requeue(run.run_id)

    def _fenced_sink(self, run: Run, keeper: LeaseKeeper) -> Any:
        async def keep(entries: Sequence[Entry]) -> None:
            if not keeper.held:  # a worker that lost the thread writes nothing of the run
                return
            try:
                await self.redis.append_events(run.run_id, entries)
            except redis.ResponseError as error:
                if "equal or smaller" not in str(error):
                    raise
                # a worker that lost the lease wrote there before it noticed: if the lease
                # is still ours, ours go on after it; if not, this worker stops
                if not keeper.held:
                    raise LeaseLostError.refused(run.thread_id, keeper.token, None) from None
                last = await self.redis.last_event(run.run_id)
                moved = [Entry(str(last + n), e.kind, e.data) for n, e in enumerate(entries, 1)]
                await self.redis.append_events(run.run_id, moved)

        return keep

    def resumed(self) -> None:
        """This process was paused and goes on (SIGCONT): each run whose lease ran out
        meanwhile stops before any of its code goes on (another worker has taken it up), so
        a tool it was in does not finish its work a second time. Called in the main thread
        (a signal handler), ahead of the event loop's next step."""
        for run_id, keeper in list(self._keepers.items()):
            run = self.live.get(run_id)
            if keeper.expired and run is not None and run.task is not None:
                keeper.lost.set()
                run.task.cancel()

    def drain(self) -> None:
        """This worker stops: each of its runs stops at its next step boundary and goes back
        to the queue (see ``RunDrained``)."""
        for run in self.live.values():
            run.draining = True

    def _loop_call(self, run: Run) -> None:
        """The lease was lost (from the heartbeat thread): stop the run on its loop."""
        task = run.task
        if task is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed
                task.get_loop().call_soon_threadsafe(task.cancel)

    def _say_lost(self, run: Run) -> None:
        if self.requeue is not None:  # whoever holds the thread, or no one: queued again
            task = asyncio.ensure_future(self.requeue(run.run_id))
            self._requeues.add(task)
            task.add_done_callback(self._requeues.discard)
        self.logger.warning(
            "run %s on thread %s: this worker lost the thread's lease (it was paused or cut "
            "off past it); another worker takes the run up, and nothing more of it is "
            "written here",
            run.run_id,
            run.thread_id,
        )

    async def _close(self, run: Run, keeper: LeaseKeeper) -> None:
        """Record how ``run`` ended and close its stream, while the lease is still ours."""
        if not keeper.held:
            self._say_lost(run)
            return
        await run.log.flush() if isinstance(run.log, RunLog) else None
        await self.store.put_run(run)
        await self.redis.end_events(run.run_id)
        run.done.set()
        await self._queue_next(run.thread_id)

    async def _queue_next(self, thread_id: str) -> None:
        """Queue the thread's next run, now that its turn has come (see ``submit_next``)."""
        if self.requeue is None:
            return
        run_id = next_in_turn(await self.store.thread_runs(thread_id))
        if run_id is not None:
            await self.requeue(run_id)

    async def _fail(self, run: Run, why: str) -> None:
        """End ``run`` as ``error`` saying ``why``, in its record and in its stream (a
        client that follows it reads the reason)."""
        error = RuntimeError(why)
        run.mark("error", why)
        run.output = error
        last = await self.redis.last_event(run.run_id)
        await self.redis.append_events(run.run_id, [Entry(str(last + 1), FAILURE, error)])

    async def _end_unserved(self, run: Run) -> None:
        why = f"assistant {run.assistant_id!r} is not served by the workers that took it"
        await self._fail(run, why)
        await self.store.put_run(run)
        await self.redis.end_events(run.run_id)
        await self._queue_next(run.thread_id)
