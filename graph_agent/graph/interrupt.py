"""Dynamic interrupts: ``interrupt(value)`` pauses the thread from inside a node."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Sequence
from typing import Any

from ..errors import GraphUsageError

__all__ = ["interrupt"]


class NodeInterrupt(BaseException):
    """Raised by :func:`interrupt` to stop the node; the engine catches it and pauses.

    It derives from ``BaseException`` so that a node's ``except Exception`` cannot swallow it.
    """

    def __init__(self, value: Any, index: int) -> None:
        super().__init__(value)
        self.value = value
        self.index = index


class TaskScope:
    """What ``interrupt()`` needs to know about the node that is running."""

    __slots__ = ("_lock", "can_interrupt", "count", "node", "resume")

    def __init__(self, node: str, resume: Sequence[Any], can_interrupt: bool) -> None:
        self.node = node
        self.resume = resume
        self.can_interrupt = can_interrupt
        self.count = 0
        self._lock = threading.Lock()  # a node's own worker threads may call interrupt()

    def next_index(self) -> int:
        with self._lock:
            index = self.count
            self.count += 1
            return index


current_task: contextvars.ContextVar[TaskScope | None] = contextvars.ContextVar(
    "graph_agent_current_task", default=None
)


def interrupt(value: Any = None) -> Any:
    """Pause the thread here and hand ``value`` to the caller; return the resume value.

    The first time it runs, the node stops and the thread pauses (``StateSnapshot.interrupts``
    holds ``value``). ``invoke(Command(resume=answer), config)`` runs the node again from its
    start, and this call returns ``answer``. A node may call it several times; the n-th call
    returns the n-th resume value. Code before the call runs again on resume, so keep it
    free of side effects or make them idempotent.
    """
    scope = current_task.get()
    if scope is None:
        raise GraphUsageError(
            "interrupt() was called outside a graph node; call it from inside a node function"
        )
    if not scope.can_interrupt:
        raise GraphUsageError(
            f"node '{scope.node}' called interrupt() but the graph has no saver to keep the "
            "paused thread; compile it with a saver, e.g. compile(saver=MemorySaver())"
        )
    index = scope.next_index()
    if index < len(scope.resume):
        return scope.resume[index]
    raise NodeInterrupt(value, index)
