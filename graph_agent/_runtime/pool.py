"""The thread pool shared by graph steps and tool calls."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def thread_pool() -> ThreadPoolExecutor:
    """One pool for the process; large enough that nested graphs and tools do not starve it."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(
                    max_workers=max(32, 4 * (os.cpu_count() or 1)),
                    thread_name_prefix="graph-agent",
                )
    return _pool


def run_all(calls: Sequence[Callable[[], T]]) -> list[T | BaseException]:
    """Run the calls concurrently (the first on this thread) and wait for every one; each
    result is the call's value or the exception it raised, in the calls' order.

    A waiting thread never blocks on a call that has not started: it takes the calls no
    worker has taken and runs them itself. So nested graphs and agents (a node that invokes
    a graph whose step runs parallel nodes, at any depth) cannot deadlock the shared pool;
    when the pool is busy the nested calls simply run on the caller's thread.
    """
    if len(calls) < 2:
        return [_outcome(call) for call in calls]
    batch = _Batch(calls)
    batch.spawn()
    results = batch.results
    results[0] = _outcome(calls[0])
    # Helpers take calls from the front; this thread takes them from the end, so short
    # calls are not handed from thread to thread when nobody needs to.
    queue = batch.queue
    while queue:
        try:
            index, context, call = queue.pop()
        except IndexError:
            break
        results[index] = _outcome(functools.partial(context.run, call))
    for helper in batch.close():
        if not helper.cancel():
            helper.result()  # it is running a call (or has finished): wait for it
    return results


class _Batch:
    """The calls of one ``run_all`` that no thread has taken yet, and its helpers: pool
    jobs that take calls from the queue until it is empty.

    Each call is one deque item, not one pool job: a pool job costs a future, a lock and a
    queue hand-over, which for a wide fan-out of short calls cost more than the calls.
    A helper that starts asks for one more while calls wait, so helpers (up to the pool's
    size) join as fast as workers are free, and none are woken for calls already done."""

    __slots__ = ("_closed", "_helpers", "_limit", "_lock", "queue", "results")

    def __init__(self, calls: Sequence[Callable[[], Any]]) -> None:
        # every call runs in a copy of the caller's context, taken now (the first runs in it)
        self.queue: deque[tuple[int, contextvars.Context, Callable[[], Any]]] = deque(
            (index, contextvars.copy_context(), calls[index]) for index in range(1, len(calls))
        )
        self.results: list[Any] = [None] * len(calls)
        self._helpers: list[Future[None]] = []
        self._limit = min(len(calls) - 1, thread_pool()._max_workers)
        self._lock = threading.Lock()
        self._closed = False

    def spawn(self) -> None:
        """Ask the pool for one more helper, while calls wait and the limit allows."""
        with self._lock:
            if self._closed or not self.queue or len(self._helpers) >= self._limit:
                return
            # RuntimeError: the pool is shut down (interpreter exit); the caller runs the calls
            with contextlib.suppress(RuntimeError):
                self._helpers.append(thread_pool().submit(self._help))

    def _help(self) -> None:
        self.spawn()
        queue, results = self.queue, self.results
        while True:
            try:
                index, context, call = queue.popleft()
            except IndexError:
                return
            results[index] = _outcome(functools.partial(context.run, call))

    def close(self) -> list[Future[None]]:
        """No more helpers; the ones asked for so far."""
        with self._lock:
            self._closed = True
            return list(self._helpers)


def _outcome(call: Callable[[], T]) -> T | BaseException:
    try:
        return call()
    except BaseException as exc:
        return exc


class Countdown:
    """How many of a batch of calls still run; they finish on several threads."""

    __slots__ = ("_count", "_lock")

    def __init__(self, count: int) -> None:
        self._count = count
        self._lock = threading.Lock()

    def one_finished(self) -> int:
        """Count one call as finished; how many still run."""
        with self._lock:
            self._count -= 1
            return self._count

    def running(self) -> int:
        """How many calls still run."""
        return self._count
