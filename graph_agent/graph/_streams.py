"""Reading a run as a stream of events while it runs.

The sync stream runs the graph on a worker thread and hands events over a bounded queue
(a slow reader slows the run down instead of piling events up); the async stream runs it as
a task on the caller's loop. Closing a stream early (``break``, ``close()``, cancelling)
asks the run to stop at the next step boundary and waits for it to get there, so the
thread is left at a checkpoint it can be resumed from.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from .._context import EventBus, put_on_loop
from .._listeners import run_listeners
from ._effects import RunStopped

_DONE = object()


class _QueueListener:
    """Puts each event on a bounded queue; gives up once the reader has gone."""

    __slots__ = ("closed", "queue")

    def __init__(self, size: int) -> None:
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=size)
        self.closed = False

    def on_event(self, event: Any) -> None:
        self.put(event)

    def put(self, item: Any) -> None:
        while not self.closed:
            try:
                self.queue.put(item, timeout=0.05)
                return
            except queue.Full:
                continue


def sync_event_stream(
    run: Callable[[EventBus], Any], listeners: tuple[Any, ...], size: int = 1024
) -> Iterator[Any]:
    """Call ``run(bus)`` on a worker thread; yield every event it emits, then return (or
    raise what the run raised)."""
    reader = _QueueListener(size)
    bus = EventBus((*run_listeners(listeners), reader), streaming=True)

    def work() -> None:
        try:
            run(bus)
            reader.put(_DONE)
        except RunStopped:
            reader.put(_DONE)
        except BaseException as error:  # handed to the reader
            reader.put(error)

    thread = threading.Thread(
        target=contextvars.copy_context().run, args=(work,), name="graph-agent-events"
    )
    thread.start()
    try:
        while True:
            item = reader.queue.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        bus.stop()
        reader.closed = True
        while thread.is_alive():  # let the run reach its next step boundary
            with contextlib.suppress(queue.Empty):
                reader.queue.get(timeout=0.05)
        thread.join()


async def async_event_stream(
    run: Callable[[EventBus], Awaitable[Any]], listeners: tuple[Any, ...]
) -> AsyncIterator[Any]:
    """Run ``run(bus)`` as a task on this loop; yield every event it emits."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[Any] = asyncio.Queue()

    class _Reader:
        def on_event(self, event: Any) -> None:
            put_on_loop(loop, events, event)

    bus = EventBus((*run_listeners(listeners), _Reader()), streaming=True)

    async def work() -> None:
        try:
            await run(bus)
            events.put_nowait(_DONE)
        except RunStopped:
            events.put_nowait(_DONE)
        except BaseException as error:
            events.put_nowait(error)
            if isinstance(error, asyncio.CancelledError):
                raise

    task = asyncio.ensure_future(work())
    try:
        while True:
            item = await events.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        bus.stop()
        if not task.done():
            # the reader is gone; the run's own error was reported as an event
            with contextlib.suppress(BaseException):
                await asyncio.shield(task)
