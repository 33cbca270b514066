"""Dynamic interrupts: ``interrupt(value)`` pauses the thread from inside a node."""

from __future__ import annotations

from typing import Any

from .._runtime.interrupts import NodeInterrupt
from .._runtime.task_scope import current_task
from ..errors import GraphUsageError
from ._pauses import DURING, pause_record

__all__ = ["interrupt"]


def interrupt(value: Any = None) -> Any:
    """Pause the thread here and hand ``value`` to the caller; return the resume value.

    The first time it runs, the task stops and the thread pauses
    (``StateSnapshot.interrupts`` lists it, with its ``id``). ``invoke(Command(resume=answer),
    config)`` runs the node again from its start, and this call returns ``answer``. Each call
    has its own id (derived from the task and the call's position), so a node may call it
    several times, and parallel tool calls that each call it are each resumed with their own
    value (``Command(resume={id: value, ...})``). Code before the call runs again on resume:
    keep it free of side effects or make them idempotent.
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
    interrupt_id = scope.next_interrupt_id()
    if interrupt_id in scope.resume:
        return scope.resume[interrupt_id]
    raise NodeInterrupt(
        [pause_record(interrupt_id, scope.node, DURING, value, scope.run.namespace)]
    )
