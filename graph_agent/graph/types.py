"""Values a run hands back to the caller: node outputs, snapshots, interrupts, commands."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from .config import RunnableConfig
from .state import OverAllState

__all__ = ["Command", "Interrupt", "NodeOutput", "StateSnapshot"]

_MISSING: Any = object()


@dataclasses.dataclass(frozen=True, slots=True)
class NodeOutput:
    """One node's result in a run: its ``update`` and the ``state`` after its super-step merged."""

    node: str
    update: Mapping[str, Any] | None
    state: OverAllState


@dataclasses.dataclass(frozen=True, slots=True)
class Interrupt:
    """Why a thread is paused.

    ``when`` is ``"before"`` / ``"after"`` for ``interrupt_before`` / ``interrupt_after``, and
    ``"during"`` for ``interrupt(value)`` called inside ``node``; ``value`` is what it was given.
    ``id`` names it in ``Command(resume={id: value})`` when several are pending.
    """

    id: str
    node: str
    when: Literal["before", "after", "during"]
    value: Any = None


@dataclasses.dataclass(frozen=True, slots=True)
class StateSnapshot:
    """A thread's state at one checkpoint.

    ``next`` names the nodes that run when the thread resumes (empty when its last run
    finished); ``interrupts`` says why it is paused (empty when it is not); ``step`` counts
    the thread's checkpoints before this one.
    """

    values: OverAllState
    next: tuple[str, ...]
    checkpoint_id: str
    parent_id: str | None
    created_at: datetime
    metadata: Mapping[str, Any]
    interrupts: tuple[Interrupt, ...]
    thread_id: str = "default"
    step: int = 0

    @property
    def config(self) -> RunnableConfig:
        """A config that replays or forks from this checkpoint."""
        return RunnableConfig(thread_id=self.thread_id, checkpoint_id=self.checkpoint_id)


class Command:
    """Resume a paused thread: ``invoke(Command(resume=value), config)``.

    ``resume`` is returned by the pending ``interrupt()`` call (or a dict ``{interrupt_id:
    value}`` when several are pending); ``update`` is merged into the state before the
    thread continues, as if the paused nodes' predecessor had returned it.
    """

    __slots__ = ("resume", "update")

    def __init__(self, *, resume: Any = _MISSING, update: Mapping[str, Any] | None = None) -> None:
        self.resume = resume
        self.update = update

    @property
    def has_resume(self) -> bool:
        return self.resume is not _MISSING

    def __repr__(self) -> str:
        parts = []
        if self.has_resume:
            parts.append(f"resume={self.resume!r}")
        if self.update is not None:
            parts.append(f"update={self.update!r}")
        return f"Command({', '.join(parts)})"
