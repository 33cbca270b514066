"""Reading a run as a stream of events while it runs.

The sync stream runs the graph on a worker thread and hands events over a bounded queue
(a slow reader slows the run down instead of piling events up); the async stream runs it as
a task on the caller's loop, with the same bound (``EVENTS_AHEAD``): the run's own task
waits at its next ``await`` while its reader is that far behind, and a worker thread of
the run (a sync node or tool) waits right after its event. Closing a stream early
(``break``, ``close()``) asks the run to stop at the next step boundary and waits for it to
get there, so the thread is left at a checkpoint it can be resumed from. Cancelling the task
that reads an async stream cancels the run at once: it stores what it can keep
(``_runtime.workers.NodeCut``) and ends.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import functools
import queue
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Iterator
from typing import Any

from .._runtime.bus import EventBus
from ..errors import RunStopped
from ..events.listeners import run_listeners

__all__ = ["EVENTS_AHEAD", "async_event_stream", "sync_event_stream"]

EVENTS_AHEAD = 1024
"""How many events a run may be ahead of the reader of its event stream (sync or async)."""

# A worker thread waiting for the reader stops waiting when the loop has not run a callback
# for this long: the loop's thread is then waiting for the worker (a sync ``invoke`` inside
# an async node or tool), and the reader cannot read until the worker goes on.
_LOOP_PATIENCE = 0.25

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
    run: Callable[[EventBus], Any], listeners: tuple[Any, ...], size: int = EVENTS_AHEAD
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


class _AsyncReader:
    """The async stream's listener: hands each event to the reader on ``loop``, in the order
    the run emitted them, and never waits while it does (it is called under the bus's lock,
    on the loop's thread as well as on worker threads). How far the run may get ahead is
    enforced elsewhere: ``gate`` for worker threads, ``_Paced`` for the run's own task."""

    __slots__ = (
        "_cond",
        "_getter",
        "_loop_thread",
        "_ping",
        "_pinged_at",
        "_room",
        "_waiting",
        "closed",
        "items",
        "loop",
        "size",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, size: int) -> None:
        self.loop = loop
        self.size = size
        self.items: collections.deque[Any] = collections.deque()
        self.closed = False
        self._loop_thread = threading.get_ident()
        self._getter: asyncio.Future[None] | None = None  # the reader, waiting for an item
        self._room: asyncio.Future[None] | None = None  # the run's task, waiting for room
        self._cond = threading.Condition()  # worker threads wait on it for room
        self._waiting = 0  # how many do
        self._ping: threading.Event | None = None  # set by the loop when it runs
        self._pinged_at = 0.0

    def on_event(self, event: Any) -> None:
        if not self.closed:
            self.put(event)

    def put(self, item: Any) -> None:
        """Add ``item`` (the run's end too: never refused) and wake the reader."""
        self.items.append(item)
        if threading.get_ident() == self._loop_thread:
            self._wake_getter()
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody reads
                self.loop.call_soon_threadsafe(self._wake_getter)

    def _wake_getter(self) -> None:
        getter = self._getter
        if getter is not None and not getter.done():
            getter.set_result(None)

    def full(self) -> bool:
        """Whether the run is as far ahead of the reader as it may be."""
        return len(self.items) >= self.size and not self.closed

    async def get(self) -> Any:
        """The next item, once there is one (on the loop)."""
        while not self.items:
            self._getter = self.loop.create_future()
            try:
                await self._getter
            finally:
                self._getter = None
        item = self.items.popleft()
        if len(self.items) < self.size:
            self._made_room()
        return item

    def _made_room(self) -> None:
        room = self._room
        if room is not None and not room.done():
            room.set_result(None)
        with self._cond:  # held by a worker only between its test and its wait
            if self._waiting:
                self._cond.notify_all()

    def room(self) -> asyncio.Future[None]:
        """A future that is done once the run may go on (on the loop)."""
        if self._room is None or self._room.done():
            self._room = self.loop.create_future()
            if not self.full():
                self._room.set_result(None)
        return self._room

    def gate(self) -> None:
        """After an event was delivered: a worker thread waits while the reader is
        ``size`` events behind. On the loop's thread nothing may block: the run's task
        waits at its next ``await`` instead (``_Paced``)."""
        if not self.full() or threading.get_ident() == self._loop_thread:
            return
        with self._cond:
            while self.full():
                if not self._loop_runs():
                    return  # the loop's thread waits for this one: going on is the way out
                self._waiting += 1
                try:
                    self._cond.wait(0.05)
                finally:
                    self._waiting -= 1

    def _loop_runs(self) -> bool:
        """False when the loop has not run a callback for ``_LOOP_PATIENCE`` seconds (with
        the condition's lock held: one ping at a time, shared by the waiting threads)."""
        ping = self._ping
        if ping is None or ping.is_set():
            ping = self._ping = threading.Event()
            self._pinged_at = time.monotonic()
            try:
                self.loop.call_soon_threadsafe(ping.set)
            except RuntimeError:  # the loop is closed
                return False
            return True
        return time.monotonic() - self._pinged_at < _LOOP_PATIENCE

    def close(self) -> None:
        """The reader has gone: drop what it did not read, and let the run go on."""
        self.closed = True
        self.items.clear()
        self._made_room()


class _Paced:
    """Awaits the run's coroutine, and each time it is to resume after an ``await``, first
    waits while the reader is ``size`` events behind: the run's task emits its events on the
    loop, where nothing may block, so it waits at its next ``await`` instead. Everything
    else is what ``await run`` does: values, exceptions (a cancellation too) and closing
    are handed on to the run."""

    __slots__ = ("_reader", "_run")

    def __init__(self, run: Coroutine[Any, Any, Any], reader: _AsyncReader) -> None:
        self._run = run
        self._reader = reader

    def __await__(self) -> Generator[Any, None, Any]:
        return self._drive()

    def _drive(self) -> Generator[Any, None, Any]:
        run, reader = self._run, self._reader
        error: BaseException | None = None
        try:
            while True:
                try:
                    if error is None:
                        waiting_on = run.send(None)
                    else:
                        waiting_on = run.throw(error)
                        error = None
                except StopIteration as done:
                    return done.value
                try:
                    yield waiting_on  # a future of the run's, to the task
                except GeneratorExit:
                    raise
                except BaseException as exc:  # the future failed, or the task was cancelled
                    error = exc
                    continue
                while reader.full():
                    try:
                        yield from reader.room()
                    except GeneratorExit:
                        raise
                    except BaseException as exc:  # cancelled while it waited
                        error = exc
                        break
        finally:
            run.close()  # a no-op once it returned; else it exits as a closed await would


async def async_event_stream(
    run: Callable[[EventBus], Coroutine[Any, Any, Any]],
    listeners: tuple[Any, ...],
    size: int = EVENTS_AHEAD,
) -> AsyncIterator[Any]:
    """Run ``run(bus)`` as a task on this loop; yield every event it emits. The run gets at
    most about ``size`` events ahead of the reader (see the module's doc)."""
    reader = _AsyncReader(asyncio.get_running_loop(), size)
    bus = EventBus((*run_listeners(listeners), reader), streaming=True)
    bus.gate = reader.gate
    bus.pace = functools.partial(_Paced, reader=reader)

    async def work() -> None:
        try:
            await _Paced(run(bus), reader)
            reader.put(_DONE)
        except RunStopped:
            reader.put(_DONE)
        except BaseException as error:
            reader.put(error)
            if isinstance(error, asyncio.CancelledError):
                raise

    task = asyncio.ensure_future(work())
    waited = False
    try:
        while True:
            item = await reader.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    except asyncio.CancelledError:
        # the reader's task was cancelled: so is the run, at once; it stores what it can
        # keep (the answer streamed so far, its tool calls answered) before it ends
        bus.stop()
        reader.close()
        waited = True
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):  # cancelled again: stop waiting
                await asyncio.shield(task)
        raise
    finally:
        bus.stop()
        reader.close()
        if not task.done() and not waited:
            # the reader is gone; the run's own error was reported as an event
            with contextlib.suppress(BaseException):
                await asyncio.shield(task)
