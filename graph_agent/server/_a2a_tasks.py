"""A2A tasks read from our runs: a task IS a run (its id is the run's), its context IS the
run's thread, and a task paused on an interrupt (``input-required``) goes on in the run that
answers it (a resume on the same thread). Nothing here keeps a task: every answer is read
from the runs service and the thread's checkpoints, so any server process answers for any
task when the runs are kept in a shared store (Redis).

The runs of a task: the run that started it, then each next run of the thread that answers
an interrupt (``command.resume``, over A2A or over the Agent Protocol), up to the thread's
next run with new input (another task). The last of them (``head``) says the task's state."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from a2a.helpers.proto_helpers import new_data_part
from a2a.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)

from ..graph import RunnableConfig, StateSnapshot
from ..messages import AssistantMessage, UserMessage
from ..runs import Run
from ._run_chains import chain_from
from ._server import Served, Server
from ._wire_messages import to_jsonable
from ._wire_state import values_to_wire

__all__ = [
    "RESULT_ARTIFACT",
    "TERMINAL",
    "TaskRuns",
    "build_task",
    "data_part",
    "result_artifact",
    "snapshot_of",
    "task_message",
    "task_runs",
    "task_state",
    "task_status",
]

TERMINAL = frozenset(
    {TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED}
)
RESULT_ARTIFACT = "result"


@dataclasses.dataclass(frozen=True)
class TaskRuns:
    """A task's runs, oldest first: ``runs[0]`` started it, ``head`` is its latest."""

    runs: list[Run]

    @property
    def first(self) -> Run:
        return self.runs[0]

    @property
    def head(self) -> Run:
        return self.runs[-1]

    @property
    def task_id(self) -> str:
        return self.first.run_id

    @property
    def context_id(self) -> str:
        return self.first.thread_id


async def task_runs(server: Server, task_id: str, served: Served) -> TaskRuns | None:
    """The runs of the task ``task_id`` of ``served`` (``None``: no such task there)."""
    run = await server.runs.get(task_id)
    if run is None or server.by_assistant.get(run.assistant_id) is not served:
        return None
    return TaskRuns(chain_from(await server.runs.thread_runs(run.thread_id), run))


def snapshot_of(run: Run) -> StateSnapshot | None:
    """The thread's state the ended ``run`` left (``None`` while it runs)."""
    return run.output if isinstance(run.output, StateSnapshot) else None


def task_state(head: Run) -> TaskState:
    """The task's state as its latest run says it: an ended run whose thread waits for an
    answer is ``input-required``."""
    if head.status == "pending":
        return TaskState.TASK_STATE_SUBMITTED
    if head.status == "running":
        return TaskState.TASK_STATE_WORKING
    if head.status == "cancelled":
        return TaskState.TASK_STATE_CANCELED
    if head.status in ("error", "timeout"):
        return TaskState.TASK_STATE_FAILED
    snapshot = snapshot_of(head)
    if snapshot is not None and snapshot.interrupts:
        return TaskState.TASK_STATE_INPUT_REQUIRED
    return TaskState.TASK_STATE_COMPLETED


def data_part(value: Any) -> Part:
    """``value`` (converted to JSON data) as a data part."""
    return new_data_part(to_jsonable(value))


def task_message(task: TaskRuns, number: str, role: Role, parts: list[Part]) -> Message:
    """A message of ``task``'s, its id made of the task's and ``number``."""
    return Message(
        message_id=f"{task.task_id}-{number}",
        context_id=task.context_id,
        task_id=task.task_id,
        role=role,
        parts=parts,
    )


def _question(value: Any) -> str:
    """An interrupt's question as text, for a client that reads text only: the value when it
    is text, its ``question`` or ``description``, or the descriptions of the tool calls an
    approval asks about (``HumanInTheLoopHook``'s ``action_requests``); else nothing."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        return ""
    for key in ("question", "description"):
        if isinstance(value.get(key), str):
            return str(value[key])
    asked = value.get("action_requests")
    if isinstance(asked, list):
        said = [a.get("description") for a in asked if isinstance(a, Mapping)]
        return "\n\n".join(d for d in said if isinstance(d, str))
    return ""


def _status_said(task: TaskRuns, state: TaskState) -> Message | None:
    """What the agent says with the task's state: the question of an ``input-required``
    task (each pending interrupt: its text, and its id and value as data), why it failed."""
    head = task.head
    if state == TaskState.TASK_STATE_INPUT_REQUIRED:
        snapshot = snapshot_of(head)
        assert snapshot is not None
        parts = []
        for pause in snapshot.interrupts:
            asked = _question(pause.value)
            if asked:
                parts.append(Part(text=asked))
            parts.append(data_part({"id": pause.id, "value": pause.value}))
        return task_message(task, f"{head.run_id}-input", Role.ROLE_AGENT, parts)
    if state == TaskState.TASK_STATE_FAILED:
        why = head.error or "the run failed"
        return task_message(task, f"{head.run_id}-failed", Role.ROLE_AGENT, [Part(text=why)])
    return None


def result_artifact(task: TaskRuns, snapshot: StateSnapshot) -> Artifact:
    """The task's result: the agent's last answer as text, or a graph's values as data."""
    messages = snapshot.values.get("messages")
    if isinstance(messages, list):
        last = messages[-1] if messages else None
        text = last.text if isinstance(last, AssistantMessage) else ""
        parts = [Part(text=text)]
    else:
        parts = [data_part(values_to_wire(snapshot.values, thread_id=task.context_id))]
    return Artifact(
        artifact_id=f"{task.task_id}-{RESULT_ARTIFACT}", name=RESULT_ARTIFACT, parts=parts
    )


async def _history(
    server: Server, task: TaskRuns, snapshot: StateSnapshot | None, length: int | None
) -> list[Message]:
    """The task's conversation: the thread's messages written since the task began."""
    if snapshot is None or length == 0:
        return []
    messages = snapshot.values.get("messages")
    if not isinstance(messages, list):
        return []
    served = server.by_assistant.get(task.first.assistant_id)
    before = 0
    began_at = task.first.started_at_checkpoint
    if served is not None and began_at is not None:
        at = RunnableConfig(thread_id=task.context_id, checkpoint_id=began_at)
        earlier = await served.graph.aget_state(at)
        kept = earlier.values.get("messages") if earlier is not None else None
        before = len(kept) if isinstance(kept, list) else 0
    history = []
    for number, message in enumerate(messages[before:], start=before):
        if isinstance(message, UserMessage) and message.text:
            role: Role = Role.ROLE_USER
        elif isinstance(message, AssistantMessage) and message.text:
            role = Role.ROLE_AGENT
        else:
            continue  # tool calls and their results, system prompts: the agent's own work
        history.append(task_message(task, str(number), role, [Part(text=message.text)]))
    return history[-length:] if length is not None else history


def _timestamp(run: Run) -> datetime:
    return datetime.fromtimestamp(run.updated_at, timezone.utc)


def task_status(task: TaskRuns) -> TaskStatus:
    """The task's status as its latest run says it, with what the agent says with it."""
    state = task_state(task.head)
    status = TaskStatus(state=state)
    status.timestamp.FromDatetime(_timestamp(task.head))
    said = _status_said(task, state)
    if said is not None:
        status.message.CopyFrom(said)
    return status


async def build_task(server: Server, task: TaskRuns, history_length: int | None = None) -> Task:
    """The A2A task of ``task``'s runs: its state, its result once completed, its history
    (the last ``history_length`` messages; ``None``: all)."""
    state = task_state(task.head)
    snapshot = snapshot_of(task.head)
    out = Task(id=task.task_id, context_id=task.context_id, status=task_status(task))
    if state == TaskState.TASK_STATE_COMPLETED and snapshot is not None:
        out.artifacts.append(result_artifact(task, snapshot))
    out.history.extend(await _history(server, task, snapshot, history_length))
    return out
