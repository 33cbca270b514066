"""The thread pool shared by graph steps and tool calls."""

from __future__ import annotations

import contextvars
import functools
import os
import threading
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


def submit(fn: Callable[..., T], *args: Any) -> Future[T]:
    """Run ``fn(*args)`` on the pool in a copy of the caller's context, so context variables
    (tracing, request ids) reach it as they would on the calling thread."""
    return thread_pool().submit(contextvars.copy_context().run, fn, *args)


def run_all(calls: Sequence[Callable[[], T]]) -> list[T | BaseException]:
    """Run the calls concurrently (the first on this thread) and wait for every one; each
    result is the call's value or the exception it raised, in the calls' order.

    A waiting thread never blocks on a call that has not started: it takes the call back
    from the pool's queue and runs it itself. So nested graphs and agents (a node that
    invokes a graph whose step runs parallel nodes, at any depth) cannot deadlock the
    shared pool; when the pool is busy the nested calls simply run on the caller's thread.
    """
    rest = calls[1:]
    contexts = [contextvars.copy_context() for _ in rest]
    pool = thread_pool()
    futures = [pool.submit(ctx.run, call) for ctx, call in zip(contexts, rest)]
    results: list[T | BaseException] = [_outcome(calls[0])]
    # Workers take calls from the front of the queue; this thread takes them back from the
    # end, so short calls are not handed from thread to thread when nobody needs to.
    taken: dict[int, T | BaseException] = {}
    for index in range(len(futures) - 1, -1, -1):
        if futures[index].cancel():
            taken[index] = _outcome(functools.partial(contexts[index].run, rest[index]))
    for index, future in enumerate(futures):
        if index in taken:
            results.append(taken[index])
        else:
            try:
                results.append(future.result())
            except BaseException as exc:
                results.append(exc)
    return results


def _outcome(call: Callable[[], T]) -> T | BaseException:
    try:
        return call()
    except BaseException as exc:
        return exc
