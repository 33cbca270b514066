"""One event loop per sync run, for the async-only code it calls.

A sync run (``invoke``, ``stream``, ``stream_events``) that meets an async-only tool or
interceptor must run a coroutine to completion. Doing that with ``asyncio.run`` each time
gives every call a new loop, and breaks what the code caches across calls (an
``httpx.AsyncClient`` is bound to the loop it was first used on). Instead, the outermost sync
run owns one loop, started on a helper thread the first time a coroutine needs it, shared
by every call of that run (tool calls on pool threads and nested graph runs see it through
their copied context) and closed when the run ends. A run that never meets a coroutine
starts no thread.
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


class _RunLoop:
    """A loop on a daemon thread, started on first use."""

    __slots__ = ("_lock", "loop", "thread")

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
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

    def close(self) -> None:
        loop, thread = self.loop, self.thread
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(_wind_down(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


def _serve(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    loop.call_soon(ready.set)
    loop.run_forever()


async def _wind_down() -> None:
    """Cancel what the run left behind on its loop, and close its async generators."""
    current = asyncio.current_task()
    leftovers = [t for t in asyncio.all_tasks() if t is not current]
    for task in leftovers:
        task.cancel()
    await asyncio.gather(*leftovers, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


_current: contextvars.ContextVar[_RunLoop | None] = contextvars.ContextVar(
    "graph_agent_run_loop", default=None
)


class RunLoopScope:
    """``with RunLoopScope():`` around a sync run. The outermost scope owns the run's loop
    (made only if a coroutine needs it) and closes it on exit; nested scopes share it."""

    __slots__ = ("_owned", "_token")

    def __enter__(self) -> None:
        if _current.get() is not None:
            self._owned = None
            return
        self._owned = _RunLoop()
        self._token = _current.set(self._owned)

    def __exit__(self, *exc: object) -> None:
        if self._owned is not None:
            _current.reset(self._token)
            self._owned.close()


def run_coroutine_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion from sync code and return its result.

    Inside a sync run it runs on the run's loop, in the caller's context (context
    variables, the current task); outside one, with ``asyncio.run`` (on a pool thread when
    this thread already runs a loop). Called from the run's loop thread itself (sync code
    inside an async tool), it gets a loop of its own rather than waiting on itself.
    """
    holder = _current.get()
    if holder is None or threading.current_thread() is holder.thread:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coroutine)
        from ._pool import submit

        outcome: T = submit(asyncio.run, coroutine).result()
        return outcome
    loop = holder.get()
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
