"""A bounded backlog of background jobs, one waiting job per key, worked one at a time by a
thread that lives only while there is work (so an idle process has no extra thread, and a
process that exits first finishes what is queued, as Python joins its non-daemon threads).

A job for a key that already has one waiting is merged into it (``merge(older, newer)``), so
only the newest runs; a full backlog drops its oldest waiting job. Failures never escape the
worker: they are counted and handed to ``failed`` (which logs them)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Backlog", "BacklogCounts"]

J = TypeVar("J")


@dataclasses.dataclass(frozen=True, slots=True)
class BacklogCounts:
    """What a backlog did so far: jobs ``queued``, ``done``, ``failed``, ``coalesced`` into a
    newer job of the same key, ``dropped`` from a full backlog; ``pending``: waiting or
    running now."""

    queued: int = 0
    done: int = 0
    failed: int = 0
    coalesced: int = 0
    dropped: int = 0
    pending: int = 0


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Backlog(Generic[J]):
    """Jobs by key, worked in the order their key was first queued, one at a time."""

    def __init__(
        self,
        work: Callable[[J], None],
        *,
        failed: Callable[[J, Exception], None],
        dropped: Callable[[J], None],
        limit: int,
        thread_name: str,
    ) -> None:
        self._work = work
        self._on_failed = failed
        self._on_dropped = dropped
        self._limit = limit
        self._thread_name = thread_name
        self._waiting: OrderedDict[Hashable, J] = OrderedDict()
        self._running = False  # a worker thread owns the backlog (it may be between jobs)
        self._busy = False
        self._counts = BacklogCounts()
        self._lock = threading.Condition()
        self._on_idle: list[Callable[[], None]] = []

    def _count(self, **more: int) -> None:
        counts = self._counts  # under self._lock
        self._counts = dataclasses.replace(
            counts, **{name: getattr(counts, name) + n for name, n in more.items()}
        )

    def counts(self) -> BacklogCounts:
        with self._lock:
            pending = len(self._waiting) + self._busy
            return dataclasses.replace(self._counts, pending=pending)

    def count_failure(self) -> None:
        """Count a job that failed before it could be queued (as queued, and failed)."""
        with self._lock:
            self._count(queued=1, failed=1)

    def submit(self, key: Hashable, job: J, merge: Callable[[J, J], J]) -> None:
        """Queue ``job`` (merged into the waiting job of ``key``, if any) and make sure a
        worker runs. Never blocks on the work."""
        dropped: J | None = None
        with self._lock:
            self._count(queued=1)
            older = self._waiting.get(key)
            if older is not None:
                self._waiting[key] = merge(older, job)  # keeps its place in the line
                self._count(coalesced=1)
            else:
                if len(self._waiting) >= self._limit:
                    _, dropped = self._waiting.popitem(last=False)
                    self._count(dropped=1)
                self._waiting[key] = job
            start = not self._running
            self._running = True
        if dropped is not None:
            self._on_dropped(dropped)
        if start:
            self._start()

    def _start(self) -> None:
        try:
            threading.Thread(target=self._drain, name=self._thread_name).start()
        except RuntimeError as error:  # no new threads (the interpreter is shutting down)
            with self._lock:
                lost = list(self._waiting.values())
                self._waiting.clear()
                self._count(failed=len(lost))
                self._running = False
                self._lock.notify_all()
            for job in lost:
                self._on_failed(job, error)

    def _drain(self) -> None:
        try:
            while True:
                with self._lock:
                    if not self._waiting:
                        return
                    _, job = self._waiting.popitem(last=False)
                    self._busy = True
                try:
                    self._work(job)
                except Exception as error:
                    with self._lock:
                        self._count(failed=1)
                    self._on_failed(job, error)
                else:
                    with self._lock:
                        self._count(done=1)
                finally:
                    with self._lock:
                        self._busy = False
        finally:
            with self._lock:
                self._running = False
                self._lock.notify_all()
                wake, self._on_idle = self._on_idle, []
            for callback in wake:
                callback()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until no job is waiting or running; ``False`` if ``timeout`` seconds passed
        first."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._running, timeout)

    async def aflush(self, timeout: float | None = None) -> bool:
        """``flush`` without blocking the event loop."""
        loop = asyncio.get_running_loop()
        idle: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_settle, idle)

        with self._lock:
            if not self._running:
                return True
            self._on_idle.append(wake)
        try:
            done, _ = await asyncio.wait({idle}, timeout=timeout)
            return bool(done)
        finally:
            with self._lock:
                if wake in self._on_idle:
                    self._on_idle.remove(wake)
