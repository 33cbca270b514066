"""Tasks: one node run (PULL) or one ``Send`` (PUSH) in a super-step, with a stable id.

A task's id is derived from (namespace, the checkpoint its step started from, step, node,
kind, index), so it is the same when a step is re-run after a pause or a failure, and
different on a fork. This module also says how a stopped step is written into a checkpoint:
the finished tasks' writes (``pending_writes`` by task id), the pending ``Send``s, and the
resume values given so far (``resume_values`` by interrupt id).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._runtime.ids import derive_id
from .._runtime.workers import StepCancelled
from ._spec import NodeSpec
from .config import RunnableConfig
from .state import OverAllState, Updates
from .types import Command, Send

PULL = "pull"
PUSH = "push"
SENDS_KEY = "__sends__"  # in pending_writes: the Sends a stopped step still has to run
UPDATES_MARK = "updates"  # a stored write that is an ``Updates``
BASE_KEY = "__base__"  # in pending_writes: [checkpoint id, step] the stopped step started from


class Task:
    """One node to run in a super-step, with the state it sees."""

    __slots__ = ("_id", "config", "id_parts", "index", "kind", "node", "resuming", "state")

    def __init__(
        self,
        node: NodeSpec,
        state: OverAllState,
        config: RunnableConfig,
        kind: str,
        index: int,
        id_parts: tuple[Any, ...],
        resuming: bool,
    ) -> None:
        self.node = node
        self.state = state
        self.config = config
        self.kind = kind
        self.index = index  # the node's position (PULL) or the Send's position (PUSH)
        self.id_parts = id_parts
        self.resuming = resuming
        self._id: str | None = None

    @property
    def id(self) -> str:
        """The task's stable id (computed on first use: most tasks never need it)."""
        if self._id is None:
            self._id = derive_id(*self.id_parts, self.node.name, self.kind, self.index)
        return self._id

    @property
    def order(self) -> tuple[int, int, int]:
        """Merge order: node tasks by node position, then Sends in Send order."""
        return (0, self.index, 0) if self.kind == PULL else (1, self.index, 0)


class TaskResult:
    """What a task gave: ``update`` (a dict, ``None`` or a ``Command``), or the pause
    (``interrupt``: records), or ``error``."""

    __slots__ = ("after_cancel", "error", "interrupt", "kept", "task", "update")

    def __init__(
        self,
        task: Task,
        update: Any = None,
        interrupt: Sequence[dict[str, Any]] | None = None,
        error: BaseException | None = None,
        kept: Mapping[str, Any] | None = None,
    ) -> None:
        self.task = task
        self.update = update
        self.interrupt = interrupt
        self.error = error
        self.kept = kept  # what a stopped task kept for its re-run (``TaskScope.keep``)
        # its run was cancelled, and it ended all the same: "finished" (a sync node's thread,
        # which cannot be stopped, returned) or "cut" (it ended on what it had: ``NodeCut``)
        self.after_cancel = ""

    @property
    def finished(self) -> bool:
        return self.error is None and self.interrupt is None

    def split(self) -> tuple[Any, list[str | Send] | None]:
        """The update to merge and the ``goto`` targets (``None``: follow the edges)."""
        update = self.update
        if isinstance(update, Command):
            return update.update, (update.goto_targets() if update.goto is not None else None)
        return update, None


def step_results(sent: TaskResult) -> list[TaskResult]:
    """A single task's result, sent back alone for an ``ExecuteEffect``, as the step's list.
    A task that finished after its run was cancelled (a sync node's thread cannot be
    stopped) is kept, then the cancellation goes on: a ``StepCancelled`` result follows."""
    if sent.after_cancel:
        return [sent, TaskResult(sent.task, error=StepCancelled())]
    return [sent]


# -- a stopped step, as stored in a checkpoint ---------------------------------------------


def encode_goto(goto: list[str | Send] | None) -> list[Any] | None:
    if goto is None:
        return None
    return [t if isinstance(t, str) else {"send": t.node, "arg": dict(t.arg)} for t in goto]


def decode_goto(goto: list[Any] | None) -> list[str | Send] | None:
    if goto is None:
        return None
    return [t if isinstance(t, str) else Send(t["send"], t["arg"]) for t in goto]


@dataclass(slots=True, frozen=True)
class StoredWrite:
    """What a task of a stopped step finished with: its node, its update (a dict, ``None``
    or an ``Updates``) and its ``goto`` targets (``None``: follow the edges)."""

    node: str
    update: Any
    goto: list[str | Send] | None

    @classmethod
    def of(cls, result: TaskResult) -> StoredWrite:
        update, goto = result.split()
        return cls(result.task.node.name, update, goto)

    def stored(self) -> list[Any]:
        """As a checkpoint stores it: ``[node, update, goto]``; an ``Updates`` as
        ``[node, [part, ...], goto, "updates"]`` (its writes kept apart: they merge in order)."""
        update = self.update
        if type(update) is Updates:
            return [self.node, list(update.parts), encode_goto(self.goto), UPDATES_MARK]
        return [self.node, update, encode_goto(self.goto)]

    @classmethod
    def read(cls, stored: Sequence[Any]) -> StoredWrite:
        """The write as ``stored`` holds it (``stored()``'s inverse)."""
        node, update, goto, *mark = stored
        if mark == [UPDATES_MARK]:
            update = Updates(*update)
        return cls(node, update, decode_goto(goto))

    def result(self, task: Task) -> TaskResult:
        """The task's result, as if it had just returned this write."""
        goto = self.goto
        return TaskResult(
            task, Command(update=self.update, goto=goto) if goto is not None else self.update
        )


def pending_frame(finished: Sequence[TaskResult], sends: Sequence[Send]) -> dict[str, Any]:
    """``pending_writes`` for a step that stopped: the finished tasks' writes by task id, and
    the step's ``Send``s (so they run again on resume)."""
    frame: dict[str, Any] = {}
    for result in finished:
        frame[result.task.id] = StoredWrite.of(result).stored()
    if sends:
        frame[SENDS_KEY] = [[s.node, dict(s.arg)] for s in sends]
    return frame


def read_frame(pending: Mapping[str, Any]) -> tuple[dict[str, StoredWrite], list[Send]]:
    """The finished writes (by task id) and the Sends of a stored step."""
    done: dict[str, StoredWrite] = {}
    sends: list[Send] = []
    for key, value in pending.items():
        if key == SENDS_KEY:
            sends = [Send(node, arg) for node, arg in value]
        else:
            done[key] = StoredWrite.read(value)
    return done, sends


def encode_resume(resume: Mapping[str, Any]) -> dict[str, list[Any]]:
    """``resume_values`` as stored: interrupt id -> ``[value]``."""
    return {key: [value] for key, value in resume.items()}


def decode_resume(stored: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    return {key: values[0] for key, values in stored.items() if values}
