"""Who is running: the run and the task a piece of code belongs to.

The engine sets ``current_task`` around every node call. ``interrupt()``, ``emit()``, the
agent's model and tool nodes and the tool manager read it to name their interrupts and
events. This module imports nothing else of the package, so every layer may use it.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

__all__ = [
    "NOTHING_KEPT",
    "EventBus",
    "Listener",
    "NodeInterrupt",
    "RunScope",
    "TaskScope",
    "current_task",
    "derive_id",
    "kept_id",
    "paced",
    "put_on_loop",
]

_log = logging.getLogger("graph_agent.events")


def derive_id(*parts: object) -> str:
    """A stable, UUID-shaped id for ``parts`` (version 1 of the scheme: blake2b of the
    parts joined by NUL). The same parts always give the same id, in every process."""
    digest = hashlib.blake2b(
        "\x00".join(map(str, ("v1", *parts))).encode(), digest_size=16
    ).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:]}"


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


def paced(run: RunScope | None, coroutine: Any) -> Any:
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


class RunScope:
    """One run of one graph: its id, thread, namespace (``()`` for the root graph) and the
    event bus (``None`` when nobody listens: then events cost nothing)."""

    __slots__ = ("bus", "namespace", "outputs", "run_id", "saver", "step", "thread_id")

    def __init__(
        self,
        run_id: str,
        thread_id: str,
        namespace: tuple[str, ...] = (),
        bus: EventBus | None = None,
        saver: Any = None,
        outputs: Callable[[Any], None] | None = None,
    ) -> None:
        self.run_id = run_id
        self.thread_id = thread_id
        self.namespace = namespace
        self.bus = bus
        self.saver = saver  # subgraphs keep their checkpoints with it
        self.outputs = outputs  # where subgraphs send their NodeOutputs (stream(subgraphs=True))
        # The step running now, when its saver stores finished work as it finishes (a
        # durable saver): ``step.keep_now(task, key, value)`` / ``akeep_now`` store it.
        self.step: Any = None

    def event(self, cls: Callable[..., Any], task: TaskScope | None = None, **fields: Any) -> None:
        """Emit ``cls(**fields)`` with this run's identity (a no-op without a bus, or when
        none of its listeners reads events of that kind)."""
        bus = self.bus
        if bus is None:
            return
        readers = bus.readers(cls.KIND)  # type: ignore[attr-defined]
        if not readers:
            return
        if task is None:
            event = cls(
                run_id=self.run_id,
                thread_id=self.thread_id,
                namespace=self.namespace,
                time=time.time(),
                **fields,
            )
        else:
            event = cls(
                run_id=self.run_id,
                thread_id=self.thread_id,
                namespace=self.namespace,
                node=task.node,
                task_id=task.task.id,
                time=time.time(),
                **fields,
            )
        bus.deliver(event, readers)
        if bus.gate is not None:  # an async stream's reader may be behind: wait for it here
            bus.gate()


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


# A node's own worker threads may call interrupt(); one lock for every scope (interrupts are
# rare) rather than a lock object per task, which the garbage collector would track.
_COUNTS_LOCK = threading.Lock()


class TaskScope:
    """One task of a run: the node it runs, its stable id (``task.id``, computed only when
    asked), and the resume values of the interrupts it may raise (by interrupt id).
    ``resuming`` says the task ran before and was stopped (a pause or a failure), so a
    subgraph it runs may have a thread to continue. ``child(key)`` gives a scope whose
    interrupts are numbered on their own (a tool call inside the tool node), so parallel
    calls never take each other's resume values."""

    __slots__ = (
        "_counts",
        "can_interrupt",
        "kept",
        "key",
        "node",
        "resume",
        "resuming",
        "run",
        "task",
    )

    def __init__(
        self,
        run: RunScope,
        node: str,
        task: _HasId,
        resume: Mapping[str, Any],
        can_interrupt: bool,
        resuming: bool = False,
        key: str = "",
        kept: dict[str, Any] | None = None,
    ) -> None:
        self.run = run
        self.node = node
        self.task = task
        self.resume = resume
        self.can_interrupt = can_interrupt
        self.resuming = resuming
        self.key = key
        # What this task kept for a re-run (see ``keep``), shared with its child scopes and
        # its retried attempts; stored with the thread when the task fails or pauses.
        self.kept: dict[str, Any] = {} if kept is None else kept
        self._counts: dict[str, int] = {}

    @property
    def task_id(self) -> str:
        return self.task.id

    def child(self, key: str) -> TaskScope:
        """A scope for one part of this task (``key``: e.g. a tool call id)."""
        return TaskScope(
            self.run,
            self.node,
            self.task,
            self.resume,
            self.can_interrupt,
            self.resuming,
            f"{self.key}/{key}",
            self.kept,
        )

    def keep(self, value: Any) -> None:
        """Keep ``value`` (serializable) for this scope: if the task fails or pauses, a re-run
        of it gets ``value`` back from ``recall()`` instead of doing that part again (a tool
        call that finished beside one that failed or paused)."""
        self.kept[self.key] = value  # one dict item: atomic, whatever thread keeps it

    def store_kept(self, running: Callable[[], int]) -> None:
        """Store what this scope kept at once, when its run's saver is durable and
        ``running()`` sibling calls still run (a killed process must not lose it)."""
        step = self.run.step
        if step is not None and self.key in self.kept:
            step.keep_now(self.task, self.key, self.kept[self.key], running)

    async def astore_kept(self, running: Callable[[], int]) -> None:
        """``store_kept`` in async runs."""
        step = self.run.step
        if step is not None and self.key in self.kept:
            await step.akeep_now(self.task, self.key, self.kept[self.key], running)

    def recall(self) -> Any:
        """What an earlier run of this task kept for this scope, or ``NOTHING_KEPT``."""
        value = self.kept.get(self.key, NOTHING_KEPT)
        if value is not NOTHING_KEPT or not self.resume:
            return value
        return self.resume.get(kept_id(self.task_id, self.key), NOTHING_KEPT)

    def next_interrupt_id(self) -> str:
        """The id of the next ``interrupt()`` call in this scope: derived from the task id,
        the scope's key and the call's position, so it is the same when the task re-runs."""
        with _COUNTS_LOCK:
            index = self._counts.get(self.key, 0)
            self._counts[self.key] = index + 1
        return derive_id(self.task_id, self.key, index)


def kept_id(task_id: str, key: str) -> str:
    """Where a value a task kept for scope ``key`` is stored among the resume values."""
    return f"{task_id}/kept{key}"


class NodeInterrupt(BaseException):
    """Raised by :func:`interrupt` to stop the task; the engine catches it and pauses.

    ``records`` holds one record per pending interrupt (parallel tool calls of one task, or
    a paused subgraph, may raise several at once). It derives from ``BaseException`` so that
    a node's ``except Exception`` cannot swallow it.
    """

    def __init__(self, records: Sequence[dict[str, Any]]) -> None:
        super().__init__(*[r.get("value") for r in records])
        self.records = list(records)

    @classmethod
    def combine(cls, interrupts: Sequence[NodeInterrupt]) -> NodeInterrupt:
        """One interrupt holding every record of ``interrupts`` (in order)."""
        return cls([record for i in interrupts for record in i.records])


NOTHING_KEPT: Any = object()

current_task: contextvars.ContextVar[TaskScope | None] = contextvars.ContextVar(
    "graph_agent_current_task", default=None
)
