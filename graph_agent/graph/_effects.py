"""What the engine core asks its drivers to do (the effects), and the signals that cross
the line between a subgraph's run and its parent's.

The effects follow the one protocol (``checkpoint.effects``): each has ``run(io)`` for a
sync run and ``arun(io)`` for an async one, where ``io`` is what the driver holds (the
saver, and the executor of a step's tasks: ``EngineIO``). This module imports nothing of
the engine above it (``_cursor``, ``_progress``, ``_core``, ``_drivers``); what an effect
needs of them is a protocol here (``StepWriter``, ``EngineIO``)."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Protocol

from checkpoint import BaseCheckpointSaver, Checkpoint, CheckpointDelta, UnserializableValueError
from checkpoint.base import supports_leases
from checkpoint.effects import Effect as BaseEffect

from ..errors import GraphUsageError
from ._spec import BranchSpec
from ._tasks import Task, TaskResult
from .config import RunnableConfig
from .state import OverAllState
from .types import Command, NodeOutput, Send


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


def note(exc: BaseException, message: str) -> None:
    """Add ``message`` to ``exc``'s notes once (Python 3.11+)."""
    if sys.version_info >= (3, 11) and message not in getattr(exc, "__notes__", ()):
        exc.add_note(message)


class SaverIO(Protocol):
    """What a load or a put is performed with: the graph's saver."""

    @property
    def saver(self) -> BaseCheckpointSaver | None: ...


class EngineIO(SaverIO, Protocol):
    """What the graph's effects are performed with (``_drivers.GraphIO``)."""

    def execute(self, effect: ExecuteEffect) -> list[TaskResult] | TaskResult: ...

    def aexecute(self, effect: ExecuteEffect) -> Awaitable[list[TaskResult] | TaskResult]: ...


class SaverOnly:
    """A ``SaverIO`` for reads outside a run (``get_state``)."""

    __slots__ = ("saver",)

    def __init__(self, saver: BaseCheckpointSaver) -> None:
        self.saver = saver


def _saver(io: SaverIO) -> BaseCheckpointSaver:
    saver = io.saver
    assert saver is not None, "the core loads and puts only with a saver"
    return saver


def fenced_saver(saver: BaseCheckpointSaver, thread_id: str) -> BaseCheckpointSaver:
    """``saver``, checked to keep leases, for a write fenced by ``RunnableConfig.lease``."""
    if not supports_leases(saver):
        raise GraphUsageError(
            f"the run on thread '{thread_id}' holds a lease (RunnableConfig.lease), but its "
            f"saver {type(saver).__name__} keeps no leases, so its writes cannot be fenced: use "
            "a saver that implements acquire_lease (MemorySaver, SqliteSaver, RedisSaver), or "
            "run without a lease"
        )
    return saver


class LoadEffect(BaseEffect):
    """Send back ``saver.get(thread_id, checkpoint_id)``."""

    __slots__ = ("checkpoint_id", "thread_id")

    def __init__(self, thread_id: str, checkpoint_id: str | None) -> None:
        self.thread_id = thread_id
        self.checkpoint_id = checkpoint_id

    def run(self, io: SaverIO) -> Checkpoint | None:
        return _saver(io).get(self.thread_id, self.checkpoint_id)

    def arun(self, io: SaverIO) -> Awaitable[Checkpoint | None]:
        return _saver(io).aget(self.thread_id, self.checkpoint_id)


class ExecuteEffect(BaseEffect):
    """Run the tasks (in parallel when several); send back a ``TaskResult`` per task run
    (a task cancelled because a sibling failed gives none), or, for a single task, its
    ``TaskResult`` alone (see ``_tasks.step_results``). Resume values by interrupt id.

    ``cursor`` (with ``frontier``, ``base`` and ``done``, the step's tasks that finished in
    an earlier run) lets a driver on a durable saver store what finishes while the rest of
    the step still runs, as pending writes (see ``_progress``); ``None`` without a saver."""

    __slots__ = ("base", "cursor", "done", "frontier", "resume", "tasks")

    def __init__(
        self,
        tasks: list[Task],
        resume: Mapping[str, Any],
        cursor: StepWriter | None = None,
        frontier: Frontier | None = None,
        base: tuple[str | None, int] | None = None,
        done: Sequence[TaskResult] = (),
    ) -> None:
        self.tasks = tasks
        self.resume = resume
        self.cursor = cursor
        self.frontier = frontier
        self.base = base
        self.done = done

    def run(self, io: EngineIO) -> list[TaskResult] | TaskResult:
        return io.execute(self)

    def arun(self, io: EngineIO) -> Awaitable[list[TaskResult] | TaskResult]:
        return io.aexecute(self)


class RouteEffect(BaseEffect):
    """Call each router on ``state``; send back what each returned, in order."""

    __slots__ = ("branches", "config", "state")

    def __init__(
        self, branches: list[BranchSpec], state: OverAllState, config: RunnableConfig
    ) -> None:
        self.branches = branches
        self.state = state
        self.config = config

    def _call(self, branch: BranchSpec) -> Any:
        try:
            if branch.takes_config:
                return branch.fn(self.state, self.config)
            return branch.fn(self.state)
        except Exception as exc:
            note(exc, f"raised by the router of the conditional edge from '{branch.source}'")
            raise

    def run(self, io: EngineIO) -> list[Any]:
        results = []
        for branch in self.branches:
            result = self._call(branch)
            if type(result) is not str and inspect.isawaitable(result):  # (a label: not one)
                if inspect.iscoroutine(result):
                    result.close()
                raise GraphUsageError(
                    f"the router of the conditional edge from '{branch.source}' is async; run "
                    "the graph with ainvoke()/astream()"
                )
            results.append(result)
        return results

    def arun(self, io: EngineIO) -> Awaitable[list[Any]]:
        return self._arun()

    async def _arun(self) -> list[Any]:
        results = []
        for branch in self.branches:
            result = self._call(branch)
            if type(result) is not str and inspect.isawaitable(result):
                try:
                    result = await result
                except Exception as exc:
                    note(
                        exc, f"raised by the router of the conditional edge from '{branch.source}'"
                    )
                    raise
            results.append(result)
        return results


class PutEffect(BaseEffect):
    """Store the checkpoint; send back ``None``. With ``fence`` (the run's lease,
    ``RunnableConfig.lease``) the write is fenced by it: ``LeaseLostError`` when the thread's
    lease is no longer it, and the run stops."""

    __slots__ = ("check_head", "checkpoint", "delta", "fence", "updates")

    def __init__(
        self,
        checkpoint: Checkpoint,
        delta: CheckpointDelta,
        check_head: bool,
        updates: Sequence[tuple[str, Any]],
        fence: str | None = None,
    ) -> None:
        self.checkpoint = checkpoint
        self.delta = delta
        self.check_head = check_head
        self.updates = updates  # (node, update) of the step, to name writers in errors
        self.fence = fence

    def writers_of(self, key: str) -> list[str]:
        """The nodes whose updates in this step wrote ``key``."""
        return [n for n, u in self.updates if isinstance(u, Mapping) and key in u]

    def explained(self, exc: UnserializableValueError) -> UnserializableValueError:
        """``exc`` naming the nodes that wrote the value that cannot be stored."""
        writers = self.writers_of(exc.key) if exc.key is not None else []
        if not writers:
            return exc
        who = ", ".join(f"'{w}'" for w in writers)
        error = UnserializableValueError(
            f"{exc} (written by node {who})", key=exc.key, path=exc.path, type_name=exc.type_name
        )
        error.__cause__ = exc
        return error

    def run(self, io: SaverIO) -> None:
        try:
            if self.fence is None:  # a saver written before fencing takes no fence argument
                _saver(io).put(self.checkpoint, self.delta, check_head=self.check_head)
            else:
                saver = fenced_saver(_saver(io), self.checkpoint.thread_id)
                saver.put(self.checkpoint, self.delta, check_head=self.check_head, fence=self.fence)
        except UnserializableValueError as exc:
            raise self.explained(exc)  # noqa: B904 (explained() sets the cause)

    def arun(self, io: SaverIO) -> Awaitable[None]:
        return self._arun(io)

    async def _arun(self, io: SaverIO) -> None:
        checkpoint, delta, check_head, fence = (
            self.checkpoint,
            self.delta,
            self.check_head,
            self.fence,
        )
        try:
            if fence is None:
                await _saver(io).aput(checkpoint, delta, check_head=check_head)
            else:
                saver = fenced_saver(_saver(io), checkpoint.thread_id)
                await saver.aput(checkpoint, delta, check_head=check_head, fence=fence)
        except UnserializableValueError as exc:
            raise self.explained(exc)  # noqa: B904 (explained() sets the cause)


class EmitEffect(BaseEffect):
    """Hand these outputs to a streaming caller (the drivers yield them: they are not
    performed)."""

    __slots__ = ("outputs",)

    def __init__(self, outputs: list[NodeOutput]) -> None:
        self.outputs = outputs


Effect = LoadEffect | ExecuteEffect | RouteEffect | PutEffect | EmitEffect
Frontier = tuple[list[str], Sequence[Send]]


class StepWriter(Protocol):
    """Where a running step started (``_cursor.Cursor``), as an ``ExecuteEffect`` needs it:
    a driver storing the step's finished work asks it for the checkpoint that holds it as
    pending writes (``_progress``)."""

    @property
    def check_head(self) -> bool: ...

    @property
    def config(self) -> RunnableConfig: ...

    def with_writes(
        self,
        frontier: Frontier,
        *,
        resume: Mapping[str, Any],
        finished: Sequence[TaskResult],
        base: tuple[str | None, int],
    ) -> Checkpoint: ...
