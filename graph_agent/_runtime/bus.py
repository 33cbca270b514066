"""The event bus: what hands a run's events to its listeners.

Every run with listeners has an ``EventBus`` (a run nobody listens to has none, and its events
cost nothing). ``RunScope.event`` builds an event only when one of the bus's listeners reads
its kind and hands it over here; a nested run's bus is a listener of its parent's. A listener
that raises is logged on ``graph_agent.events`` and never breaks the run.

This module is the engine's side of the events (the graph, the tools and the run scopes use
it); users need only ``graph_agent.events``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["EventBus", "Listener", "paced", "put_on_loop"]

_log = logging.getLogger("graph_agent.events")


class Listener(Protocol):
    """Receives every run event: ``on_event(event)``. An optional ``aon_event`` coroutine is
    used instead in async runs. An optional ``event_kinds`` (a frozenset of ``kind``s) says
    which events it reads: it gets only those, and when every listener of a run has one,
    events of other kinds are not even built."""

    def on_event(self, event: Any) -> None: ...


class EventBus:
    """Hands a run's events to its listeners, in order. A listener that raises is logged and
    never breaks the run. In an async run (``bind_loop``), a listener with an async
    ``aon_event`` gets its events through it, one at a time and in order, and ``drain()``
    waits until it has had them all. ``stop()`` asks the run to stop at the next step
    boundary (a closed event stream does that). ``gate``, when set (by an async event
    stream; a nested run's bus has its parent's), is called after each event is delivered,
    outside the bus's lock: there a producer on a worker thread waits while the stream's
    reader is too far behind."""

    __slots__ = (
        "_kinds",
        "_lock",
        "_queues",
        "_readers",
        "_stop",
        "event_kinds",
        "gate",
        "listeners",
        "loop",
        "pace",
        "parent",
        "streaming",
    )

    def __init__(
        self,
        listeners: tuple[Any, ...],
        *,
        streaming: bool = False,
        parent: EventBus | None = None,
    ) -> None:
        self.listeners = listeners
        # the kinds its listeners read (None: every kind); a bus is a listener of its parent
        self._kinds = tuple(getattr(listener, "event_kinds", None) for listener in listeners)
        self.event_kinds: frozenset[str] | None = _kinds_read(self._kinds)
        self._readers: dict[str, tuple[Any, ...]] = {}  # kind -> its listeners (filled on use)
        self.streaming = streaming  # somebody reads model deltas: models are streamed
        self.parent = parent  # the bus of the run this one's run is nested in
        self._stop = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._queues: dict[int, asyncio.Queue[Any]] = {}
        self._lock = threading.Lock()
        self.gate: Callable[[], None] | None = None if parent is None else parent.gate
        # set with ``gate``: wraps a coroutine the run starts as a task of its own (parallel
        # async nodes, tool calls) so it too waits at its awaits while the reader is behind
        self.pace: Callable[[Any], Any] | None = None if parent is None else parent.pace

    def readers(self, kind: str) -> tuple[Any, ...]:
        """The listeners that read events of ``kind``, in order (empty: build none)."""
        readers = self._readers.get(kind)
        if readers is None:
            readers = self._readers[kind] = tuple(
                listener
                for listener, kinds in zip(self.listeners, self._kinds)
                if kinds is None or kind in kinds
            )
        return readers

    def emit(self, event: Any) -> None:
        self.deliver(event, self.readers(event.kind))

    def deliver(self, event: Any, readers: tuple[Any, ...]) -> None:
        """Hand ``event`` to ``readers`` (``readers(event.kind)``), in order."""
        with self._lock:  # parallel tasks emit from several threads; keep each event whole
            for listener in readers:
                if self.loop is not None and hasattr(listener, "aon_event"):
                    self._hand_async(listener, event)
                    continue
                try:
                    listener.on_event(event)
                except Exception:
                    _log.exception(
                        "run event listener %r failed on a %s event; the run goes on",
                        listener,
                        getattr(event, "kind", "?"),
                    )

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Use ``aon_event`` on ``loop`` from now on; ``False`` if a loop was bound already."""
        if self.loop is not None:
            return False
        self.loop = loop
        return True

    def _hand_async(self, listener: Any, event: Any) -> None:
        loop = self.loop
        assert loop is not None
        queue = self._queues.get(id(listener))
        if queue is None:
            queue = self._queues[id(listener)] = asyncio.Queue()
            loop.call_soon_threadsafe(lambda: loop.create_task(_deliver(listener, queue)))
        put_on_loop(loop, queue, event)

    async def drain(self) -> None:
        """Wait until every async listener has had every event so far."""
        await asyncio.sleep(0)  # let events handed over from worker threads arrive
        for queue in list(self._queues.values()):
            await queue.join()

    def stop(self) -> None:
        self._stop = True

    @property
    def stop_requested(self) -> bool:
        """Whether this run, or the run it is nested in, was asked to stop."""
        return self._stop or (self.parent is not None and self.parent.stop_requested)

    def on_event(self, event: Any) -> None:
        """A bus is a listener too: a nested run's bus hands its events on to the outer one."""
        self.emit(event)


def _kinds_read(declared: tuple[Any, ...]) -> frozenset[str] | None:
    """The kinds some listener reads; ``None`` when one of them reads every kind."""
    kinds: set[str] = set()
    for listener_kinds in declared:
        if listener_kinds is None:
            return None
        kinds.update(listener_kinds)
    return frozenset(kinds)


class _HasBus(Protocol):
    """What ``paced`` reads of a run (a ``RunScope``): its bus. (A protocol, so the bus needs
    nothing of the run scope, which holds a bus.)"""

    @property
    def bus(self) -> EventBus | None: ...


def paced(run: _HasBus | None, coroutine: Any) -> Any:
    """``coroutine``, held back like its run when an async event stream's reader is behind
    (``EventBus.pace``); as it is otherwise."""
    bus = run.bus if run is not None else None
    if bus is None or bus.pace is None:
        return coroutine
    return bus.pace(coroutine)


def put_on_loop(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any], item: Any) -> None:
    """Put ``item`` on ``queue``, which belongs to ``loop``: at once from the loop's own
    thread, through the loop from any other (a sync node or tool in a worker thread)."""
    if asyncio._get_running_loop() is loop:
        queue.put_nowait(item)
    else:
        loop.call_soon_threadsafe(queue.put_nowait, item)


async def _deliver(listener: Any, queue: asyncio.Queue[Any]) -> None:
    while True:
        event = await queue.get()
        try:
            await listener.aon_event(event)
        except Exception:
            _log.exception(
                "run event listener %r failed on a %s event; the run goes on",
                listener,
                getattr(event, "kind", "?"),
            )
        finally:
            queue.task_done()
