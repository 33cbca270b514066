"""One event loop per sync run, for the async-only code it calls.

A sync run (``invoke``, ``stream``, ``stream_events``) that meets an async-only tool or
interceptor must run a coroutine to completion. Doing that with ``asyncio.run`` each time
gives every call a new loop, and breaks what the code caches across calls (an
``httpx.AsyncClient`` is bound to the loop it was first used on). Instead, the outermost sync
run owns one loop, started on a helper thread the first time a coroutine needs it, shared
by every call of that run (tool calls on pool threads and nested graph runs see it through
their copied context) and closed when the run ends. A run that never meets a coroutine
starts no thread.

Sync code that blocks the run's loop thread (a sync ``invoke`` inside an async tool) never
waits on that loop: a sync run started there owns a loop of its own, and a coroutine run
from there gets a thread and a loop of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["RunLoopScope", "run_coroutine_sync"]


_lock = threading.Lock()  # one for all runs: loops start and close rarely, runs start often


class _RunLoop:
    """A loop on a daemon thread, started on first use, closed once."""

    # Class defaults, no __init__: a run that never meets a coroutine only pays for the object.
    loop: asyncio.AbstractEventLoop | None = None
    thread: threading.Thread | None = None
    closed = False

    def get(self) -> asyncio.AbstractEventLoop | None:
        """The running loop, started now if need be; ``None`` once the scope has closed."""
        with _lock:
            if self.closed:
                return None
            if self.loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()
                self.thread = threading.Thread(
                    target=_serve, args=(loop, ready), name="graph-agent-run-loop", daemon=True
                )
                self.thread.start()
                ready.wait()
                self.loop = loop
            return self.loop

    def runs_here(self) -> bool:
        """Whether this thread is the loop's thread (so waiting here on the loop would hang)."""
        return self.thread is threading.current_thread()

    def close(self) -> None:
        with _lock:
            self.closed = True
            loop, thread = self.loop, self.thread
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(_wind_down(), loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()


def _serve(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    loop.call_soon(ready.set)
    while True:
        try:
            loop.run_forever()
            return  # stopped by close()
        except (KeyboardInterrupt, SystemExit):
            # A task raised it: asyncio stores it in the task and also raises it out of the
            # loop. The caller gets it from the task; the loop serves on, or callers hang.
            continue


async def _wind_down() -> None:
    """What ``asyncio.run`` does at its end: cancel the tasks the run left behind, close
    async generators, and stop the default executor's threads."""
    current = asyncio.current_task()
    leftovers = [t for t in asyncio.all_tasks() if t is not current]
    for task in leftovers:
        task.cancel()
    await asyncio.gather(*leftovers, return_exceptions=True)
    loop = asyncio.get_running_loop()
    await loop.shutdown_asyncgens()
    await loop.shutdown_default_executor()


_current: contextvars.ContextVar[_RunLoop | None] = contextvars.ContextVar(
    "graph_agent_run_loop", default=None
)


class RunLoopScope:
    """``with RunLoopScope():`` around a sync run. The outermost scope owns the run's loop
    (made only if a coroutine needs it) and closes it on exit; nested scopes share it.

    A scope entered on the outer scope's loop thread (an async tool that calls a graph or
    agent synchronously) owns a new loop: the sync run blocks that thread, so its coroutines
    could not run on the loop there.
    """

    __slots__ = ("_owned", "_token")

    def __enter__(self) -> None:
        outer = _current.get()
        if outer is not None and not outer.closed and not outer.runs_here():
            self._owned = None
            return
        self._owned = _RunLoop()
        self._token = _current.set(self._owned)

    def __exit__(self, *exc: object) -> None:
        owned = self._owned
        if owned is None:
            return
        try:
            owned.close()
        finally:
            # A stream's generator may be closed from another context (garbage collected
            # on another thread); the loop is closed all the same, which is what matters.
            # (Not contextlib.suppress: it would double the cost of a run's scope.)
            try:  # noqa: SIM105
                _current.reset(self._token)
            except ValueError:
                pass


def run_coroutine_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion from sync code and return its result (or raise its
    exception).

    Inside a sync run it runs on the run's loop, in the caller's context (context
    variables, the current task). Outside one it runs with ``asyncio.run``, on a new thread
    if this one already runs an event loop. Called on the run's loop thread itself (sync
    code inside an async tool) it runs the same way, outside the run, so it never waits on
    the loop it is blocking.
    """
    holder = _current.get()
    loop = None if holder is None or holder.runs_here() else holder.get()
    if loop is None:
        if asyncio._get_running_loop() is not None:
            return _run_on_own_thread(coroutine)
        return asyncio.run(coroutine)
    result: concurrent.futures.Future[T] = concurrent.futures.Future()

    def start() -> None:  # runs inside the caller's context, so the task inherits it
        task = loop.create_task(coroutine)

        def settle(done: asyncio.Task[T]) -> None:
            if done.cancelled():
                result.cancel()
            elif done.exception() is not None:
                result.set_exception(done.exception())
            else:
                result.set_result(done.result())

        task.add_done_callback(settle)

    loop.call_soon_threadsafe(contextvars.copy_context().run, start)
    return result.result()


def _run_on_own_thread(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)`` on a new thread, in a copy of the caller's context with no
    run loop: what it runs synchronously in turn cannot wait on a loop blocked here. (A
    new thread, not the pool: pool workers blocked like this one could starve it.)"""
    context = contextvars.copy_context()
    context.run(_current.set, None)
    box: concurrent.futures.Future[T] = concurrent.futures.Future()

    def work() -> None:
        try:
            box.set_result(asyncio.run(coroutine))
        except BaseException as error:
            box.set_exception(error)

    thread = threading.Thread(
        target=context.run, args=(work,), name="graph-agent-coroutine", daemon=True
    )
    thread.start()
    outcome = box.result()
    thread.join()
    return outcome
