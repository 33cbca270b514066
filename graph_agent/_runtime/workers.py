"""Worker threads for the sync calls an async run makes (sync tools, nodes and hooks).

``asyncio.to_thread`` hands a call over through a ``concurrent.futures.Future`` (with its
condition, lock and waiter deque), an asyncio future chained to it by closures, and, where the
outcome must survive a cancellation, ``asyncio.shield``'s futures and callbacks: about thirty
objects the garbage collector tracks for as long as the call runs. With thousands of runs
waiting on tools at once those objects are most of what every full collection walks. Here a
call is one queue item and one asyncio future; the threads are started as calls need them, up
to ``WORKERS`` (``asyncio``'s default executor size), and each call runs in a copy of the
caller's context.

A thread cannot be stopped. When the async run that waits for a sync call (a tool, a node)
is cancelled, the call runs on to its end anyway; if its result were dropped, resuming the
thread would run it a second time (a second payment, a second e-mail). So ``in_thread``
waits for the thread to finish and raises ``FinishedAfterCancel``, a ``CancelledError``
that carries the outcome: the tool manager, or the graph's driver, keeps it for the task's
re-run, and the graph stores what was kept before the cancellation goes on.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any

__all__ = [
    "SIBLING_FAILED",
    "WORKERS",
    "FinishedAfterCancel",
    "NodeCut",
    "WorkerCall",
    "in_thread",
    "run_cancelled",
    "to_worker",
]

WORKERS = min(32, (os.cpu_count() or 1) + 4)
"""How many worker threads sync calls from async runs share (as ``asyncio.to_thread``)."""


class WorkerCall:
    """One call handed to a worker thread. ``waiter`` is set (to ``None``) on the loop once the
    worker finished; then ``finished`` is true and ``outcome()`` returns or raises."""

    __slots__ = ("_args", "_context", "_error", "_fn", "_loop", "_value", "finished", "waiter")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        context: contextvars.Context,
    ) -> None:
        self._loop = loop
        self.waiter: asyncio.Future[None] = loop.create_future()
        self.finished = False
        # what the worker runs, let go of once it ran (the call is the queue's item itself)
        self._fn: Callable[..., Any] | None = fn
        self._args: tuple[Any, ...] = args
        self._context: contextvars.Context | None = context
        self._value: Any = None
        self._error: BaseException | None = None

    def outcome(self) -> Any:
        """The call's value, or the exception it raised, raised (only once ``finished``)."""
        if self._error is not None:
            error, self._error = self._error, None  # no traceback cycle kept alive by us
            raise error
        return self._value

    def wait_again(self) -> asyncio.Future[None]:
        """A fresh future to wait for the worker after the first wait was cancelled."""
        self.waiter = self._loop.create_future()
        if self.finished:
            self.waiter.set_result(None)
        return self.waiter

    def _run(self) -> None:
        """Worker thread: run the call, keep its outcome and let its loop settle it."""
        fn, args, context = self._fn, self._args, self._context
        self._fn = self._context = None
        self._args = ()
        assert fn is not None and context is not None, "a call runs once"
        try:
            self._value = context.run(fn, *args)
        except BaseException as exc:
            self._error = exc
        del fn, args, context
        _finished_on(self._loop).add(self)

    def _settle(self) -> None:
        self.finished = True
        if not self.waiter.done():
            self.waiter.set_result(None)


class _Finished:
    """The calls a loop's workers finished, settled on the loop together: one callback (a
    handle, its context copy, a wake-up of the loop's selector) for all the calls that finish
    while the loop is busy, where one per call would be three objects more per waiting run
    until the loop gets to it."""

    __slots__ = ("_calls", "_lock", "_scheduled")

    def __init__(self) -> None:
        self._calls: list[WorkerCall] = []
        self._lock = threading.Lock()
        self._scheduled = False

    def add(self, call: WorkerCall) -> None:
        """Worker thread: ``call`` finished; have its loop settle it."""
        with self._lock:
            self._calls.append(call)
            if self._scheduled:
                return
            self._scheduled = True
        try:
            call._loop.call_soon_threadsafe(self._settle)
        except RuntimeError:  # the loop is closed: nobody waits any more
            with self._lock:
                self._calls.clear()

    def _settle(self) -> None:
        with self._lock:
            calls, self._calls = self._calls, []
            self._scheduled = False
        for call in calls:
            call._settle()


_finished: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Finished] = (
    weakref.WeakKeyDictionary()
)
_finished_lock = threading.Lock()


def _finished_on(loop: asyncio.AbstractEventLoop) -> _Finished:
    finished = _finished.get(loop)
    if finished is None:
        with _finished_lock:
            finished = _finished.get(loop)
            if finished is None:
                finished = _finished[loop] = _Finished()
    return finished


class _Workers:
    """The threads and their queue; threads start only when no started one is idle."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._jobs: queue.SimpleQueue[WorkerCall] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._started = 0
        self._lock = threading.Lock()

    def submit(self, call: WorkerCall) -> None:
        self._jobs.put(call)
        if self._idle.acquire(blocking=False):
            return
        with self._lock:
            if self._started < self._size:
                self._started += 1
                threading.Thread(
                    target=self._work, name=f"graph-agent-async_{self._started}", daemon=True
                ).start()

    def _work(self) -> None:
        jobs, idle = self._jobs, self._idle
        while True:
            call = jobs.get()
            call._run()
            del call
            idle.release()


_workers = _Workers(WORKERS)


def _fresh_after_fork() -> None:
    global _workers, _finished_lock
    _workers = _Workers(WORKERS)  # a forked child has none of the parent's threads
    _finished_lock = threading.Lock()
    _finished.clear()


os.register_at_fork(after_in_child=_fresh_after_fork)


def _start(fn: Callable[..., Any], args: tuple[Any, ...]) -> WorkerCall:
    loop = asyncio.get_running_loop()
    call = WorkerCall(loop, fn, args, contextvars.copy_context())
    _workers.submit(call)
    return call


def start_in_worker(fn: Callable[..., Any], *args: Any) -> WorkerCall:
    """Hand ``fn(*args)`` to a worker thread, in a copy of the current context; call it on
    the event loop's thread."""
    return _start(fn, args)


async def to_worker(fn: Callable[..., Any], *args: Any) -> Any:
    """``await asyncio.to_thread(fn, *args)`` for less: run ``fn(*args)`` in a worker thread
    with the caller's context. Cancelled, it stops waiting; the thread runs on."""
    call = _start(fn, args)
    del fn, args  # the worker lets go of them once the call ran: not kept while it waits
    await call.waiter
    return call.outcome()


class FinishedAfterCancel(asyncio.CancelledError):
    """The run was cancelled while a sync tool ran in a worker thread, which then finished:
    ``result`` (or ``error``) is its outcome; ``text`` is the tool's answer once converted."""

    def __init__(
        self, result: Any = None, error: BaseException | None = None, text: str | None = None
    ) -> None:
        super().__init__(
            "cancelled while a sync tool ran; the tool finished and its result is kept"
        )
        self.result = result
        self.error = error
        self.text = text


async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a worker thread with the caller's context (as ``asyncio.to_thread``);
    cancelled, it waits for the thread and raises ``FinishedAfterCancel`` with the outcome."""
    call = _start(fn, args)
    del fn, args  # the worker lets go of them once the call ran: not kept while it waits
    try:
        await call.waiter
    except asyncio.CancelledError:
        try:
            await call.wait_again()  # the thread runs on: wait for its end
        except asyncio.CancelledError:
            raise  # cancelled again while waiting: give up on keeping it
        try:
            result = call.outcome()
        except BaseException as error:
            raise FinishedAfterCancel(error=error) from None
        raise FinishedAfterCancel(result=result) from None
    return call.outcome()


class StepCancelled(Exception):
    """An async run was cancelled while its step ran, and some of the step's work finished
    (a sync node or tool in a worker thread cannot be stopped): the core stores it like a
    failed step's, then raises this, and the async driver turns it back into
    ``CancelledError``."""


SIBLING_FAILED = "graph_agent: a task of the same step failed"
"""The message of the cancel a failed task sends the other tasks of its step: they are not
cut short by a cancel of their run (``NodeCut``), so they keep nothing partial."""


class NodeCut(asyncio.CancelledError):
    """A node's run was cancelled and the node ends on what it had: ``update`` (the part of
    the model's answer already streamed, marked cut; its tool calls answered as cancelled).
    The step stores it like any finished task's update, then the cancellation goes on."""

    def __init__(self, update: Any) -> None:
        super().__init__("the run was cancelled; the node kept what it had")
        self.update = update


def run_cancelled(stop: asyncio.CancelledError) -> bool:
    """Whether ``stop`` cancels the run itself (not a task whose sibling failed)."""
    return SIBLING_FAILED not in stop.args
