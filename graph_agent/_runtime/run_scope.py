"""The run a piece of code belongs to: its identity, its saver and its event bus."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .bus import EventBus

__all__ = ["HasId", "RunScope", "TaskRef"]


class HasId(Protocol):
    """Something with a stable ``id`` (a task of the engine)."""

    @property
    def id(self) -> str: ...


class TaskRef(Protocol):
    """What an event names of the task it comes from (a ``TaskScope``): its node and its
    task's id. (A protocol, so the run scope needs nothing of the task scope.)"""

    @property
    def node(self) -> str: ...

    @property
    def task(self) -> HasId: ...


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

    def event(self, cls: Callable[..., Any], task: TaskRef | None = None, **fields: Any) -> None:
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
