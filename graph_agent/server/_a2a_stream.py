"""A task's run streamed as A2A 1.0 events, read from the run's log as it is written (the
same log the Agent Protocol's stream and AG-UI read).

- the agent's answer, as the model writes it: ``TaskArtifactUpdateEvent``s of the task's
  ``result`` artifact, each holding the new text only (``append=true``; a model call that
  starts a new answer starts the artifact again, ``append=false``), the last one with
  ``last_chunk=true``; the artifact the chunks build is the one ``GetTask`` returns;
- each tool call and each tool result: a ``working`` status whose message is one data part,
  ``{"tool_call": {id, name, arguments}}``, ``{"tool_result": {id, name, result}}`` (or
  ``error``);
- then the state the task ended in (with its question when it waits for input)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

from a2a.types import (
    Artifact,
    Part,
    Role,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

from ..events import ModelDelta, ModelEnd, RunEvent, ToolEnd, ToolStart
from ..runs import EVENT, Entry, error_text
from ._a2a_tasks import (
    RESULT_ARTIFACT,
    TaskRuns,
    data_part,
    result_artifact,
    snapshot_of,
    task_message,
    task_state,
    task_status,
)
from ._server import Server

__all__ = ["MORE_IN_BATCH", "QUIET", "QUIET_AFTER", "task_events"]

Update = TaskStatusUpdateEvent | TaskArtifactUpdateEvent


def _arguments(text: str) -> Any:
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return text


class _AnswerStream:
    """The events of one run's log entries, for ``task``: the answer's chunks (the last one
    held back until the next comes or the run ends, to mark it ``last_chunk``), the tool
    calls and results."""

    def __init__(self, task: TaskRuns) -> None:
        self.task = task
        self.artifact_id = f"{task.task_id}-{RESULT_ARTIFACT}"
        self.said = ""  # the artifact's text as the chunks build it
        self.held: TaskArtifactUpdateEvent | None = None
        self.fresh = True  # the next chunk starts a new answer
        self.deltas = False  # the current model call streamed some text

    def _chunk(self, text: str) -> list[Update]:
        out: list[Update] = [self.held] if self.held is not None else []
        self.held = TaskArtifactUpdateEvent(
            task_id=self.task.task_id,
            context_id=self.task.context_id,
            artifact=Artifact(
                artifact_id=self.artifact_id, name=RESULT_ARTIFACT, parts=[Part(text=text)]
            ),
            append=not self.fresh,
        )
        self.said = text if self.fresh else self.said + text
        self.fresh = False
        return out

    def _working(self, number: str, value: Any) -> Update:
        said = task_message(self.task, number, Role.ROLE_AGENT, [data_part(value)])
        return TaskStatusUpdateEvent(
            task_id=self.task.task_id,
            context_id=self.task.context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_WORKING, message=said),
        )

    def entry(self, entry: Entry) -> list[Update]:
        event = entry.data
        if entry.kind != EVENT or not isinstance(event, RunEvent) or event.namespace:
            return []  # a subgraph's or a sub-agent's work: its parent's tool call shows it
        number = f"{self.task.head.run_id}-{entry.id}"
        if isinstance(event, ModelDelta) and event.text:
            self.deltas = True
            return self._chunk(event.text)
        if isinstance(event, ModelEnd):
            out: list[Update] = []
            text = getattr(event.message, "text", "") or ""
            if not self.deltas and text and event.error is None:  # not streamed: whole
                out.extend(self._chunk(text))
            self.deltas, self.fresh = False, True
            return out
        if isinstance(event, ToolStart):
            call = {"id": event.call_id, "name": event.name}
            return [
                *self._flush(),
                self._working(
                    number, {"tool_call": {**call, "arguments": _arguments(event.arguments)}}
                ),
            ]
        if isinstance(event, ToolEnd):
            done: dict[str, Any] = {"id": event.call_id, "name": event.name}
            if event.error is not None:
                done["error"] = error_text(event.error)
            else:
                done["result"] = event.result
            return [self._working(number, {"tool_result": done})]
        return []

    def _flush(self) -> list[Update]:
        held, self.held = self.held, None
        return [held] if held is not None else []

    def end(self, result: Artifact | None) -> list[Update]:
        """The last chunk once the run ended (``result``: the task's result, when it
        completed): the held one marked ``last_chunk`` when the chunks built the result,
        else the whole result in place of what they built."""
        if result is None:
            return self._flush()
        text = [p.text for p in result.parts]
        if self.held is not None and len(result.parts) == 1 and text == [self.said]:
            self.held.last_chunk = True
            return self._flush()
        whole = TaskArtifactUpdateEvent(
            task_id=self.task.task_id,
            context_id=self.task.context_id,
            artifact=result,
            last_chunk=True,
        )
        return [*self._flush(), whole]


MORE_IN_BATCH = "a2a_more_in_batch"
"""The key, in a streamed call's context state, that says whether the event just yielded
has more of its batch right behind it (ready at once): the response writes a batch in one
write (``_a2a_sse``), as the Agent Protocol's stream does."""

QUIET_AFTER = "a2a_quiet_after"
"""The key, in a streamed call's context state, of the seconds after which a quiet run
yields ``QUIET`` (for a writer that sends heartbeats); unset, it never does."""

QUIET = TaskStatusUpdateEvent()
"""What ``task_events`` yields, when asked (``QUIET_AFTER``), each time the run was quiet
that long; never sent as it is."""


async def _follow(
    server: Server, task: TaskRuns, idle: float | None
) -> AsyncIterator[list[Update]]:
    """The events of the task's latest run as it goes (see the module's docstring), then
    the state it ended in; a list per entries of the run's log read at once (an empty one
    each ``idle`` seconds without any)."""
    head = task.head
    stream = _AnswerStream(task)
    async for batch in head.log.batches(0, idle=idle):
        updates = [update for entry in batch for update in stream.entry(entry)]
        if updates or not batch:
            yield updates
    await server.runs.join(head)
    # the ended run read again (not the thread's runs: a store may scan them all)
    ended = TaskRuns([*task.runs[:-1], await server.runs.get(head.run_id) or head])
    snapshot = snapshot_of(ended.head)
    result = None
    if task_state(ended.head) == TaskState.TASK_STATE_COMPLETED and snapshot is not None:
        result = result_artifact(ended, snapshot)
    final = TaskStatusUpdateEvent(
        task_id=task.task_id, context_id=task.context_id, status=task_status(ended)
    )
    yield [*stream.end(result), final]


async def task_events(
    server: Server, task: TaskRuns, state: MutableMapping[str, Any]
) -> AsyncIterator[Update]:
    """The events of the task's latest run, one at a time, each with
    ``state[MORE_IN_BATCH]`` saying whether another follows it at once; ``QUIET`` each
    ``state[QUIET_AFTER]`` seconds the run is quiet, if set."""
    async for batch in _follow(server, task, state.get(QUIET_AFTER)):
        if not batch:
            state[MORE_IN_BATCH] = False
            yield QUIET
        last = len(batch) - 1
        for i, update in enumerate(batch):
            state[MORE_IN_BATCH] = i < last
            yield update
    state[MORE_IN_BATCH] = False
