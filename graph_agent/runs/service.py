"""``RunService``: the life of the runs of one process, apart from any protocol.

A protocol adapter (the Agent Protocol's routes, later A2A or AG-UI) hands each run an
``Execute``, a coroutine that drives the graph and writes what happens into the run's log,
in no protocol's words (``_log``: the run's events, its thread's state at each stored step,
its failure); the adapter encodes the log in its protocol when a client reads it. The
service keeps what every protocol promises around it:

- every accepted run is recorded (``RunStore``) before ``start`` returns, so a client is
  never answered for a run that a crash could lose; a restarted process lists it and takes
  it up again (``recover``) from its thread's last checkpoint;
- one run at a time per thread: a new run on a busy thread is refused (``reject``), waits
  its turn (``enqueue``), or stops the thread's running and queued runs first
  (``interrupt``; ``rollback`` also removes what the cancelled run wrote: the thread is
  back where that run began, its first run rolled back leaves it empty);
- a run is ``pending`` until its thread is free, ``running``, then ``success`` (also when it
  paused for a human), ``error``, ``cancelled`` or ``timeout`` (it ran past
  ``run_timeout``); a protocol spells them its own way (the Agent Protocol has no
  ``cancelled``: LangGraph's server says ``interrupted``);
- a run is answered as accepted only once its input is stored (``started``: its first
  checkpoint), or once it is queued;
- every entry of a run's log has an id, and the log is kept with the run (``RunLog``);
- on a ``RedisRunStore`` every process on the store answers for every run: a run another
  process drives is read, followed live (``RemoteLog``), joined and cancelled here, and
  each process hears the cancels asked elsewhere of the runs it drives (``_cancels``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from checkpoint import supports_leases

from . import _cancels
from ._lease import LeaseKeeper
from ._log import FAILURE, Entry, RunLog
from ._redis import RedisRunStore
from ._remote import DriverWatch, RemoteLog, join_remote
from .errors import RunDrained
from .records import Run, RunStatus, ThreadRecord, busy_error, check_strategy
from .store import MemoryRunStore, RunStore

__all__ = ["Execute", "RunService", "ThreadOps"]

_log = logging.getLogger("graph_agent.runs")
LEASE_POLL_SECONDS = 0.05  # how often a run waiting for another process's thread looks again
SUBSCRIBE_SECONDS = 5.0  # the most a run's start waits for this process to hear cancels

# What drives a run: it writes the run's log with ``run.log.append``, sets
# ``run.started`` once the run's input is stored, and returns the final status ("success",
# paused for a human or not).
Execute = Callable[[Run], Awaitable[RunStatus]]


@dataclass(frozen=True)
class ThreadOps:
    """What the service needs of a run's thread: ``head()``, the id of its latest
    checkpoint (``None``: it has none), ``restore(checkpoint_id)``, which makes the thread
    stand where it stood at that checkpoint again (``None``: empty), and ``saver``, the saver
    that keeps it: a durable one's lease keeps every other process off the thread while the
    run goes on (two servers on one Redis never run one thread at once)."""

    head: Callable[[], Awaitable[str | None]]
    restore: Callable[[str | None], Awaitable[None]]
    saver: Any = None


def _no_mistake(error: BaseException) -> bool:
    return False


def leased(saver: Any) -> bool:
    """Whether a run on ``saver``'s threads holds its thread's lease (a durable saver that
    keeps leases): no other process runs the thread meanwhile."""
    return saver is not None and getattr(saver, "durable", False) and supports_leases(saver)


class RunService:
    """Every run of a process, one runner per thread at a time, kept in ``store``. A run
    that fails is logged on ``logger`` by the adapter's rule: ``client_mistake(error)`` tells
    a failure on what the client sent (one line at WARNING) from a fault (ERROR with its
    traceback). With ``run_timeout``, a run that runs longer (seconds, each time it is
    taken up) is stopped as a cancel stops it and ends as ``timeout``.

    ``saver_of(run)``, when set, names the saver that keeps a run's thread: a follower of
    another process's run reads there whether that process still holds the thread's lease
    (a killed one's expires: then the follower stops waiting, see ``_remote``)."""

    def __init__(
        self,
        store: RunStore | None = None,
        *,
        client_mistake: Callable[[BaseException], bool] = _no_mistake,
        logger: logging.Logger = _log,
        run_timeout: float | None = None,
    ) -> None:
        if run_timeout is not None and not run_timeout > 0:
            raise ValueError(f"run_timeout is seconds, more than 0, or None; got {run_timeout!r}")
        self.run_timeout = run_timeout
        self.store = store if store is not None else MemoryRunStore()
        self.client_mistake = client_mistake
        self.logger = logger
        self.name = f"{socket.gethostname()}:{os.getpid()}"  # in the leases it holds
        self.lease_seconds = 30.0
        self.live: dict[str, Run] = {}  # the runs this process drives or drove
        # thread id -> the ids of its runs in ``live``, oldest first (a dict keeps the order)
        self._of_thread: dict[str, dict[str, None]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.saver_of: Callable[[Run], Any] | None = None
        self._listener: asyncio.Task[None] | None = None  # hears cancels (on Redis)
        self._subscribed = asyncio.Event()
        self._new_runs: dict[str, asyncio.Event] = {}  # set when a thread's next run starts

    @property
    def shared(self) -> bool:
        """Whether other processes drive runs of this store too (it is a ``RedisRunStore``):
        then their runs are followed and cancelled from here."""
        return isinstance(self.store, RedisRunStore)

    def _redis(self) -> RedisRunStore:
        assert isinstance(self.store, RedisRunStore), "only a RedisRunStore is shared"
        return self.store

    # -- reading -----------------------------------------------------------------------------

    async def get(self, run_id: str) -> Run | None:
        """The run: this process's, or one kept in the store (its log read back, closed)."""
        run = self.live.get(run_id)
        if run is not None and not (run.behind and self.shared):
            return run
        kept = await self.store.get_run(run_id)
        if kept is None:
            return None
        if kept.active and self.shared:
            return self._follow(kept)
        return await self._ended(kept)

    def _follow(self, run: Run) -> Run:
        """``run``, a record of a run another process drives, read from the store as it goes
        (``RemoteLog``); done already if it has ended."""
        run.log = RemoteLog(self.store, run.run_id, self._over(run))  # type: ignore[assignment]
        if not run.active:
            run.started.set()
            run.done.set()
        return run

    def _watch(self, run: Run) -> DriverWatch | None:
        """What tells whether the driver of another process's ``run`` stopped (``None``:
        nothing can; see ``saver_of``)."""
        saver = self.saver_of(run) if self.saver_of is not None else None
        return DriverWatch(saver, run.thread_id) if leased(saver) else None

    def _over(self, run: Run) -> Callable[[], Awaitable[bool]]:
        watch = self._watch(run)

        async def over() -> bool:
            kept = await self.store.get_run(run.run_id)
            if kept is None or not kept.active:
                return True
            if watch is None or not await watch.stopped():
                return False
            self._say_stopped(run)
            return True

        return over

    def _say_stopped(self, run: Run) -> None:
        self.logger.warning(
            "run %s on thread %s: the process that ran it stopped (its thread's lease "
            "expired); its followers here stop waiting, and a server restarted on this store "
            "takes the run up",
            run.run_id,
            run.thread_id,
        )

    async def _ended(self, run: Run) -> Run:
        run.log = RunLog(await self.store.events(run.run_id))
        run.log.closed = True
        run.started.set()
        run.done.set()
        return run

    async def thread_runs(self, thread_id: str) -> list[Run]:
        """The thread's runs, newest first."""
        kept = await self.store.thread_runs(thread_id)
        if not self.shared:
            return [self.live.get(r.run_id, r) for r in kept]
        found = []
        for record in kept:  # another process's runs (or may be): followed
            mine = self.live.get(record.run_id)
            if mine is not None and not (mine.behind and record.active):
                found.append(mine)
            else:
                found.append(self._follow(record) if record.active else record)
        return found

    async def busy(self, thread_id: str) -> bool:
        """Whether a run of the thread is pending or running (here, or in another process
        on a shared store)."""
        return bool(await self._active_on(thread_id))

    # -- threads -----------------------------------------------------------------------------

    async def keep_thread(self, record: ThreadRecord) -> None:
        await self.store.put_thread(record)

    async def forget_thread(self, thread_id: str) -> None:
        """Drop the thread's record and its runs' (none of them is running)."""
        for run_id in self._of_thread.pop(thread_id, ()):
            self.live.pop(run_id, None)
        self._locks.pop(thread_id, None)
        await self.store.delete_thread(thread_id)

    # -- starting ----------------------------------------------------------------------------

    async def start(
        self,
        thread_id: str,
        assistant_id: str,
        kwargs: dict[str, Any],
        metadata: dict[str, Any],
        multitask_strategy: str,
        execute: Execute,
        thread: ThreadOps,
        *,
        stateless: bool = False,
    ) -> Run:
        """A new run on ``thread_id``, recorded, then started in the background; returned
        once its input is stored (or once it is queued behind the thread's running one)."""
        check_strategy(multitask_strategy)
        ahead = await self._active_on(thread_id)
        if ahead:
            if multitask_strategy == "reject":
                oldest = min(ahead, key=lambda r: r.created_at)
                running = next((r for r in ahead if r.status == "running"), oldest)
                raise busy_error(thread_id, running.run_id)
            if multitask_strategy in ("interrupt", "rollback"):
                await self._stop_all(ahead, rollback=multitask_strategy == "rollback")
        run = Run.new(
            thread_id, assistant_id, kwargs, metadata, multitask_strategy, stateless=stateless
        )
        await self.store.put_run(run)  # recorded before anyone is told of it
        started = self._new_runs.pop(thread_id, None)
        if started is not None:
            started.set()
        return await self._begin(run, execute, thread)

    async def next_run(self, thread_id: str, seconds: float) -> None:
        """Until a new run of ``thread_id`` starts here, or ``seconds`` have passed (a run
        that another process starts is seen by reading the thread's runs again then)."""
        started = self._new_runs.setdefault(thread_id, asyncio.Event())
        try:
            await asyncio.wait_for(started.wait(), seconds)
        except asyncio.TimeoutError:
            if self._new_runs.get(thread_id) is started:
                del self._new_runs[thread_id]

    async def _active_on(self, thread_id: str) -> list[Run]:
        """The thread's runs that have not ended (pending or running): on a shared store,
        also those another process drives (followed, see ``_follow``)."""
        if self.shared:
            return [r for r in await self.thread_runs(thread_id) if r.active]
        runs = (self.live.get(run_id) for run_id in self._of_thread.get(thread_id, ()))
        return [run for run in runs if run is not None and run.active]

    async def _stop_all(self, runs: list[Run], *, rollback: bool) -> None:
        """Cancel ``runs`` (a new run's ``interrupt``/``rollback``): the queued ones first
        (this process's before anything awaits, then those of others), so that none of them
        starts once the running one stops."""
        queued = [r for r in runs if r.status == "pending"]
        for run in queued:
            if not isinstance(run.log, RemoteLog):
                self._cancel_pending(run)
        for run in queued:
            if isinstance(run.log, RemoteLog):
                await self.cancel(run, rollback=rollback, wait=False)
        for run in runs:
            await self.cancel(run, rollback=rollback)

    async def _begin(self, run: Run, execute: Execute, thread: ThreadOps) -> Run:
        """Start the recorded ``run`` (here: in this process, see ``_launch``)."""
        return await self._launch(run, execute, thread)

    async def _launch(self, run: Run, execute: Execute, thread: ThreadOps) -> Run:
        run.log = RunLog(run.log.entries, sink=self._sink(run.run_id))
        self.live[run.run_id] = run
        self._of_thread.setdefault(run.thread_id, {})[run.run_id] = None
        if self.shared:
            # taken up, it may still run in the process that began it: behind that one
            # until the thread's lease says which (``_still_ours``)
            run.behind = run.began and leased(thread.saver)
            await self._heed_cancels(run)
        lock = self._locks.setdefault(run.thread_id, asyncio.Lock())
        queued = lock.locked()  # it waits for the thread's running one (enqueue)
        run.task = asyncio.create_task(self._drive(run, lock, execute, thread))
        if not queued:  # answered once its input is stored (or it failed before)
            started = asyncio.create_task(run.started.wait())
            await asyncio.wait({started, run.task}, return_when=asyncio.FIRST_COMPLETED)
            started.cancel()
        return run

    async def _heed_cancels(self, run: Run) -> None:
        """Hear the cancels other processes are asked of ``run`` (this process's listener,
        started with its first run), and cancel it before it starts if one was asked before
        it was live here (a run taken up again, or one read elsewhere once it was recorded);
        a run behind another process's reads it once its thread is leased (``_still_ours``)."""
        if self._listener is None:
            self._listener = asyncio.create_task(self.listen_for_cancels())
        with contextlib.suppress(asyncio.TimeoutError):  # Redis down: the run fails anyway
            await asyncio.wait_for(self._subscribed.wait(), SUBSCRIBE_SECONDS)
        said = None if run.behind else await self._redis().cancel_requested(run.run_id)
        if said is not None:
            await self.cancel(run, rollback=said == "rollback", wait=False)

    async def listen_for_cancels(self) -> None:
        """Until cancelled: stop the runs of this process that another process is asked to
        cancel (published on the ``RedisRunStore``; see ``_cancels``). A server starts it
        with its first run; a worker runs it beside its runs. A lost connection is opened
        again a second later; a cancel asked meanwhile is read from the store then."""
        await _cancels.listen(
            self._redis(), self._heard, self._kept_cancels, self.logger, self._subscribed
        )

    async def _heard(self, run_id: str, said: str) -> None:
        run = self.live.get(run_id)
        # (not started yet: it never starts; behind: the process that runs it heard it too)
        if run is not None and run.active and not run.behind:
            await self.cancel(run, rollback=said == "rollback", wait=False)

    async def _kept_cancels(self) -> None:
        """The cancels kept for this process's runs (asked while it did not listen)."""
        for run in [r for r in self.live.values() if r.active]:
            said = await self._redis().cancel_requested(run.run_id)
            if said is not None:
                await self._heard(run.run_id, said)

    def _sink(self, run_id: str) -> Callable[[Sequence[Entry]], Awaitable[None]]:
        async def keep(entries: Sequence[Entry]) -> None:
            await self.store.append_events(run_id, entries)

        return keep

    async def _drive(
        self, run: Run, lock: asyncio.Lock, execute: Execute, thread: ThreadOps
    ) -> None:
        try:
            async with lock:
                if run.status != "pending":  # cancelled while it waited
                    return
                keeper = await self._lease(run, thread.saver)
                try:
                    if keeper is None or await self._still_ours(run, thread):
                        await self._run_once(run, execute, thread)
                finally:
                    if keeper is not None:
                        await asyncio.to_thread(keeper.release)
        finally:
            run.started.set()
            await asyncio.shield(self._finish(run))

    async def _lease(self, run: Run, saver: Any) -> LeaseKeeper | None:
        """The lease of ``run``'s thread on a durable ``saver`` that keeps leases, held for
        the run (waited for while another process holds it); ``None`` for a saver without."""
        if not leased(saver):
            return None
        token = f"{self.name}/{run.run_id}/{uuid.uuid4().hex[:8]}"
        while True:
            keeper = LeaseKeeper(saver, run.thread_id, token, self.lease_seconds)
            if await asyncio.to_thread(keeper.acquire):
                run.lease = token  # (``behind`` until ``_still_ours`` read the run again)
                return keeper
            run.behind = run.began  # taken up here, it may still run there
            run.started.set()  # queued behind another process's run: answered as pending
            await asyncio.sleep(LEASE_POLL_SECONDS)

    async def _still_ours(self, run: Run, thread: ThreadOps) -> bool:
        """Whether ``run`` is still to be run by this process, read again once its thread is
        leased: another process on the same store may have run it meanwhile (a restart's
        recovery of a run that another server was running); then ``run`` takes its record.
        A run that waited behind that process is not run again if a cancel was asked of it
        that the process did not heed (it stopped first): it ends ``cancelled`` (its thread
        put back where it began, for a rollback)."""
        kept = await self.store.get_run(run.run_id)
        waited, run.behind = run.behind, False
        if kept is not None and not kept.active:
            for name in Run.KEPT:
                setattr(run, name, getattr(kept, name))
            return False
        said = None
        if waited and self.shared:
            said = await self._redis().cancel_requested(run.run_id)
        if said is None:
            return True
        run.mark("cancelled")
        if said == "rollback":
            run.rolled_back = True
            await thread.restore(run.started_at_checkpoint)
        return False

    async def _run_once(self, run: Run, execute: Execute, thread: ThreadOps) -> None:
        """Run ``run`` while its thread is this process's (a lock, or a worker's lease):
        ``running``, then the status it ended in; a failure is logged and written into its
        log; a cancelled run rolled back puts its thread back first."""
        run.resumed = run.began
        if not run.began:  # taken up again, it keeps where it first began
            run.started_at_checkpoint = await thread.head()
            run.began = True
        run.mark("running")
        await self.store.put_run(run)
        timer = self._timer(run)
        try:
            status = await execute(run)
        except asyncio.CancelledError:
            if run.timed_out:  # its time ran out (``run_timeout``): stopped as by a cancel
                await self._timed_out(run)
                return
            run.mark("cancelled")
            if run.rolled_back:
                await asyncio.shield(thread.restore(run.started_at_checkpoint))
            raise
        except RunDrained:
            raise
        except Exception as error:
            if self._stolen(error):
                raise
            run.mark("error", f"{type(error).__name__}: {error}")
            run.output = error
            self._log_failure(run, error)
            await run.log.append(FAILURE, error)
        else:
            run.mark(status)
        finally:
            if timer is not None:
                timer.cancel()

    def _timer(self, run: Run) -> asyncio.TimerHandle | None:
        """With a ``run_timeout``, what cancels this drive of ``run`` once it is up."""
        if self.run_timeout is None:
            return None
        task = asyncio.current_task()
        assert task is not None

        def time_out() -> None:
            if not task.done():
                run.timed_out = run.stopping = True
                task.cancel()

        return asyncio.get_running_loop().call_later(self.run_timeout, time_out)

    async def _timed_out(self, run: Run) -> None:
        """``run`` ends as ``timeout``: what it did is kept as for a cancel (the part of an
        answer streamed, the tool calls answered), and its log says why it stopped."""
        uncancel = getattr(asyncio.current_task(), "uncancel", None)
        if uncancel is not None:  # Python 3.11+: the cancel was ours, and it is handled
            uncancel()
        why = (
            f"the run took longer than {self.run_timeout:g} s, the most a run may take here "
            "(run_timeout); what it did until then is kept"
        )
        run.mark("timeout", why)
        run.output = TimeoutError(why)
        self.logger.warning("run %s on thread %s: %s", run.run_id, run.thread_id, why)
        await run.log.append(FAILURE, run.output)

    def _stolen(self, error: BaseException) -> bool:
        """Whether ``error`` says the run's thread is no longer this process's (a worker's
        lease lost): then nothing of the run is recorded by this process."""
        return False

    async def _finish(self, run: Run) -> None:
        try:
            await run.log.close()
            await self.store.put_run(run)
            await self.store.end_events(run.run_id)  # after the record: followers read it
        finally:
            run.done.set()

    def _log_failure(self, run: Run, error: BaseException) -> None:
        if self.client_mistake(error):
            said = " ".join(str(error).split())  # one line, whatever the message holds
            self.logger.warning(
                "run %s on thread %s failed on what its client sent: %s: %s",
                run.run_id,
                run.thread_id,
                type(error).__name__,
                said,
            )
        else:
            self.logger.error(
                "run %s on thread %s failed", run.run_id, run.thread_id, exc_info=error
            )

    # -- a restart ---------------------------------------------------------------------------

    async def recover(self, plan: Callable[[Run], tuple[Execute, ThreadOps] | None]) -> list[Run]:
        """Take up the runs the store holds as pending or running (accepted by a process that
        stopped before they ended), oldest first: ``plan(run)`` says how to drive each
        (``None``: it cannot be, and it ends as ``error`` saying why). Each is taken up with
        its attempt + 1, from its thread's last checkpoint; its log goes on after the events
        it had sent."""
        taken: list[Run] = []
        for run in await self.store.active_runs():
            if run.run_id in self.live:
                continue
            run.log = RunLog(await self.store.events(run.run_id))
            how = plan(run)
            if how is None:
                run.mark("error", "its assistant is no longer served; it cannot be taken up")
                run.output = RuntimeError(run.error)
                await self.store.put_run(run)
                continue
            if run.status == "running":
                run.attempt += 1
            run.status = "pending"
            execute, thread = how
            taken.append(await self._launch(run, execute, thread))
        return taken

    # -- cancel ------------------------------------------------------------------------------

    async def cancel(self, run: Run, *, rollback: bool = False, wait: bool = True) -> None:
        """Stop ``run`` (``cancelled``); with ``rollback`` its thread is put back where the
        run began (what it wrote is removed) before the thread's next run starts."""
        if not run.active:
            return
        if isinstance(run.log, RemoteLog):  # another process drives it: asked to stop it
            await self._cancel_remote(run, rollback=rollback, wait=wait)
            return
        if rollback:
            run.rolled_back = True
        if run.status == "pending":
            self._cancel_pending(run)
            if run.task is None:  # not begun here (yet): kept as cancelled
                await self.store.put_run(run)
            elif wait:
                await run.done.wait()
            return
        task = run.task
        if task is not None and not task.done():
            run.stopping = True
            task.cancel()
            if wait:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _cancel_pending(self, run: Run) -> None:
        """A queued run never starts: ``cancelled`` (kept when its task ends)."""
        run.mark("cancelled")
        if run.task is not None and not run.task.done():
            run.task.cancel()

    async def _cancel_remote(self, run: Run, *, rollback: bool, wait: bool) -> None:
        """Ask the process that drives ``run`` to stop it (it hears it at once, or reads it
        when the run starts); with ``wait``, until its record says it ended."""
        await self._redis().request_cancel(run.run_id, rollback=rollback)
        if wait:
            await self.join(run)

    async def release(self) -> None:
        """Let go of what this service opened on the running event loop (at its end)."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
        self._subscribed = asyncio.Event()  # a next loop's own
        await self.store.release()

    async def join(self, run: Run) -> None:
        """Until ``run`` ended; for another process's run, until its record says so (then
        ``run`` takes its status and output), or until its driver stopped (``_remote``)."""
        if not isinstance(run.log, RemoteLog):
            await run.done.wait()
            return
        if not await join_remote(self.store, run, self._watch(run)):
            self._say_stopped(run)

    async def delete(self, run: Run) -> None:
        """Drop the record of a run that is over."""
        self.live.pop(run.run_id, None)
        self._of_thread.get(run.thread_id, {}).pop(run.run_id, None)
        await self.store.delete_run(run.run_id)
