"""What the engine core asks its drivers to do (the effects), and the signals that cross
the line between a subgraph's run and its parent's.

Plain data: this module imports nothing of the engine above it (``_cursor``, ``_progress``,
``_core``); what an effect needs of them is a protocol here (``StepWriter``)."""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any, Protocol

from checkpoint import Checkpoint, CheckpointDelta

from ._spec import BranchSpec
from ._tasks import Task, TaskResult
from .config import RunnableConfig
from .state import OverAllState
from .types import Command, NodeOutput, Send


class StepCancelled(Exception):
    """An async run was cancelled while its step ran, and some of the step's work finished
    (a sync node or tool in a worker thread cannot be stopped): the core stores it like a
    failed step's, then raises this, and the async driver turns it back into
    ``CancelledError``."""


class ParentCommand(BaseException):
    """A node of a subgraph returned ``Command(graph=Command.PARENT)``: the subgraph stops and
    its node in the parent graph applies ``command``."""

    def __init__(self, command: Command) -> None:
        super().__init__(command)
        self.command = command


class SubgraphEntry:
    """The input of a subgraph's run: the state it is handed, and whether its task ran
    before (then the child's thread may hold a paused or finished run to continue)."""

    __slots__ = ("resume", "resuming", "values")

    def __init__(self, values: Mapping[str, Any], resume: Mapping[str, Any], resuming: bool):
        self.values = values
        self.resume = resume
        self.resuming = resuming


class LoadEffect:
    """Send back ``saver.get(thread_id, checkpoint_id)``."""

    __slots__ = ("checkpoint_id", "thread_id")

    def __init__(self, thread_id: str, checkpoint_id: str | None) -> None:
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id


class ExecuteEffect:
    """Run the tasks (in parallel when several); send back a ``TaskResult`` per task run
    (a task cancelled because a sibling failed gives none). Resume values by interrupt id.

    ``cursor`` (with ``frontier``, ``nodes``, ``base`` and ``done``, the step's tasks that
    finished in an earlier run) lets a driver on a durable saver store what finishes while
    the rest of the step still runs (see ``_progress``); ``None`` without a saver."""

    __slots__ = ("base", "cursor", "done", "frontier", "nodes", "resume", "tasks")

    def __init__(
        self,
        tasks: list[Task],
        resume: Mapping[str, Any],
        cursor: StepWriter | None = None,
        frontier: Frontier | None = None,
        nodes: Sequence[str] = (),
        base: tuple[str | None, int] | None = None,
        done: Sequence[TaskResult] = (),
    ) -> None:
        self.tasks = tasks
        self.resume = resume
        self.cursor = cursor
        self.frontier = frontier
        self.nodes = nodes
        self.base = base
        self.done = done


class RouteEffect:
    """Call each router on ``state``; send back what each returned, in order."""

    __slots__ = ("branches", "config", "state")

    def __init__(
        self, branches: list[BranchSpec], state: OverAllState, config: RunnableConfig
    ) -> None:
        self.branches = branches
        self.state = state
        self.config = config


class PutEffect:
    """Store the checkpoint; send back ``None``."""

    __slots__ = ("check_head", "checkpoint", "delta", "updates")

    def __init__(
        self,
        checkpoint: Checkpoint,
        delta: CheckpointDelta,
        check_head: bool,
        updates: Sequence[tuple[str, Any]],
    ) -> None:
        self.checkpoint = checkpoint
        self.delta = delta
        self.check_head = check_head
        self.updates = updates  # (node, update) of the step, to name writers in errors

    def writers_of(self, key: str) -> list[str]:
        """The nodes whose updates in this step wrote ``key``."""
        return [n for n, u in self.updates if isinstance(u, Mapping) and key in u]


class EmitEffect:
    """Hand these outputs to a streaming caller."""

    __slots__ = ("outputs",)

    def __init__(self, outputs: list[NodeOutput]) -> None:
        self.outputs = outputs


Effect = LoadEffect | ExecuteEffect | RouteEffect | PutEffect | EmitEffect
Frontier = tuple[list[str], Sequence[Send]]


class StepWriter(Protocol):
    """What writes a step's checkpoint (``_cursor.Cursor``), as an ``ExecuteEffect`` needs
    it: a driver storing the step's progress writes through it (``_progress``)."""

    def write(
        self,
        frontier: Frontier,
        *,
        source: str,
        nodes: Sequence[str] = (),
        resume: Mapping[str, Any] | None = None,
        finished: Sequence[TaskResult] = (),
        base: tuple[str | None, int] | None = None,
    ) -> Generator[Effect, Any, str | None]: ...
