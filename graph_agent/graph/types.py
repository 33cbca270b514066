"""Values a run hands back to the caller: node outputs, snapshots, interrupts, commands, sends."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar, Literal

from .config import RunnableConfig
from .state import OverAllState

__all__ = ["Command", "Interrupt", "NodeOutput", "Send", "StateSnapshot"]

_MISSING: Any = object()


@dataclasses.dataclass(frozen=True, slots=True)
class NodeOutput:
    """One node's result in a run: its ``update`` and the ``state`` after its super-step merged.

    ``namespace`` names the graph it ran in: ``()`` for the graph you invoked, a tuple of
    ``"node:task_id"`` parts for a subgraph (with ``stream(..., subgraphs=True)``).
    """

    node: str
    update: Mapping[str, Any] | None
    state: OverAllState
    namespace: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Interrupt:
    """Why a thread is paused.

    ``when`` is ``"before"`` / ``"after"`` for ``interrupt_before`` / ``interrupt_after``, and
    ``"during"`` for ``interrupt(value)`` called inside ``node``; ``value`` is what it was given.
    ``id`` names it in ``Command(resume={id: value})``; it is derived from the task and the
    call's position, so it stays the same across resumes. ``namespace`` is ``()`` when the
    graph itself paused, or the path of the subgraph that did.
    """

    id: str
    node: str
    when: Literal["before", "after", "during"]
    value: Any = None
    namespace: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class StateSnapshot:
    """A thread's state at one checkpoint.

    ``next`` names the nodes that run when the thread resumes (empty when its last run
    finished); ``interrupts`` says why it is paused (empty when it is not); ``step`` counts
    the thread's checkpoints before this one. With ``get_state(config, subgraphs=True)``,
    ``subgraphs`` holds the snapshot of each paused subgraph (its ``namespace`` says which).
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
    namespace: tuple[str, ...] = ()
    subgraphs: tuple[StateSnapshot, ...] = ()

    @property
    def config(self) -> RunnableConfig:
        """A config that replays or forks from this checkpoint."""
        return RunnableConfig(thread_id=self.thread_id, checkpoint_id=self.checkpoint_id)


class Send:
    """Run ``node`` once in the next super-step with ``arg`` (a dict) as the state it sees.

    A router returns a ``Send`` or a list of them (mixed with labels) for map-reduce; a node
    may return ``Command(goto=[Send(...), ...])``. The updates of the runs merge by the key
    strategies, in ``Send`` order.
    """

    __slots__ = ("arg", "node")

    def __init__(self, node: str, arg: Mapping[str, Any]) -> None:
        if not isinstance(node, str) or not node:
            raise TypeError(f"Send(node, arg): node must be a node name, got {node!r}")
        if not isinstance(arg, Mapping):
            raise TypeError(
                f"Send({node!r}, arg): arg must be a dict (the state the node sees), "
                f"got {type(arg).__name__}"
            )
        self.node = node
        self.arg = arg

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Send) and (self.node, self.arg) == (other.node, other.arg)

    def __hash__(self) -> int:
        return hash(self.node)

    def __repr__(self) -> str:
        return f"Send({self.node!r}, {dict(self.arg)!r})"


Goto = str | Send | Sequence[str | Send]


class Command:
    """Steer a run.

    As ``invoke``'s input: ``Command(resume=value)`` answers the pending ``interrupt()``
    (``resume={interrupt_id: value, ...}`` when several are pending), and ``update`` is merged
    into the state before the thread continues.

    Returned by a node: ``update`` is the node's update and ``goto`` (a node name, ``END``,
    a ``Send``, or a list of them) replaces the node's outgoing edges for this run. With
    ``graph=Command.PARENT`` inside a subgraph, both apply to the parent graph instead, as
    if the subgraph node had returned them (the basis of handoffs).
    """

    PARENT: ClassVar[str] = "__parent__"

    __slots__ = ("goto", "graph", "resume", "update")

    def __init__(
        self,
        *,
        resume: Any = _MISSING,
        update: Mapping[str, Any] | None = None,
        goto: Goto | None = None,
        graph: str | None = None,
    ) -> None:
        if graph is not None and graph != Command.PARENT:
            raise TypeError(f"Command(graph=...) takes None or Command.PARENT, got {graph!r}")
        self.resume = resume
        self.update = update
        self.goto = goto
        self.graph = graph

    @property
    def has_resume(self) -> bool:
        return self.resume is not _MISSING

    def goto_targets(self) -> list[str | Send]:
        """``goto`` as a list (empty when there is none)."""
        goto = self.goto
        if goto is None:
            return []
        if isinstance(goto, (str, Send)):
            return [goto]
        return list(goto)

    def __repr__(self) -> str:
        parts = []
        if self.has_resume:
            parts.append(f"resume={self.resume!r}")
        if self.update is not None:
            parts.append(f"update={self.update!r}")
        if self.goto is not None:
            parts.append(f"goto={self.goto!r}")
        if self.graph is not None:
            parts.append("graph=Command.PARENT")
        return f"Command({', '.join(parts)})"
