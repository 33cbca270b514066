"""The task a piece of code belongs to, and what the task keeps for its re-run.

The engine sets ``current_task`` around every node call. ``interrupt()``, ``emit()``, the
agent's model and tool nodes and the tool manager read it to name their interrupts and
events.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .ids import derive_id

if TYPE_CHECKING:
    from .run_scope import HasId, RunScope

__all__ = ["NOTHING_KEPT", "TaskScope", "current_task", "kept_id"]


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
        "_interrupts",
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
        task: HasId,
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
        self._interrupts = 0  # interrupt() calls made in this scope so far

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
            index = self._interrupts
            self._interrupts = index + 1
        return derive_id(self.task_id, self.key, index)


def kept_id(task_id: str, key: str) -> str:
    """Where a value a task kept for scope ``key`` is stored among the resume values."""
    return f"{task_id}/kept{key}"


NOTHING_KEPT: Any = object()

current_task: contextvars.ContextVar[TaskScope | None] = contextvars.ContextVar(
    "graph_agent_current_task", default=None
)
