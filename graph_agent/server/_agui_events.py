"""A run's log read as AG-UI 1.0 events (``ag-ui-protocol``'s models).

Pure conversions, no web framework and no I/O: ``AguiEncoder`` turns the entries of one run's
log (our ``RunEvent``s and the thread's state at each stored step, see ``graph_agent.runs``)
into AG-UI events, and, once the run ended, into its last ones (the messages snapshot and
``RUN_FINISHED`` with its outcome, or ``RUN_ERROR``). docs/ag-ui.md has the mapping table.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence, Set
from typing import Any

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    CustomEvent,
    FunctionCall,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedSuspendedOutcome,
    SystemMessage,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from ag_ui.core import SubagentStartedEvent as SubagentStarted

from ..events import (
    CustomEvent as OurCustom,
)
from ..events import (
    ModelDelta,
    ModelEnd,
    NodeEnd,
    NodeStart,
    RunEnd,
    RunError,
    RunEvent,
    RunStart,
    ToolEnd,
)
from ..graph import Interrupt as OurInterrupt
from ..graph import StateSnapshot
from ..messages import FILES
from ..messages import AssistantMessage as OurAssistant
from ..runs import BEFORE, EVENT, FAILURE, STATE, Entry, error_text
from ._agui_parts import content_parts
from ._agui_resume import approval_schema
from ._agui_tools import is_client_call
from ._wire_messages import NAMESPACE_WIRE, messages_to_wire, to_jsonable
from ._wire_stream import stream_message_id

__all__ = ["AguiEncoder", "agui_interrupts", "agui_messages", "state_of"]

MESSAGES = "messages"
TOOL_CALL = "tool_call"  # AG-UI's core reasons, and ours, namespaced as AG-UI asks
INPUT_REQUIRED = "input_required"
CLIENT_TOOL_REASON = "graph_agent:client_tool"


def state_of(values: Mapping[str, Any], thread_id: str) -> dict[str, Any]:
    """The thread's state as AG-UI's ``STATE_SNAPSHOT`` carries it: every key but the
    messages (they go in ``MESSAGES_SNAPSHOT``), as JSON."""
    return {str(k): to_jsonable(v, thread_id=thread_id) for k, v in values.items() if k != MESSAGES}


def _pointer(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


def state_delta(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A JSON Patch (RFC 6902) from ``before`` to ``after``, key by key at the top."""
    patch: list[dict[str, Any]] = [
        {"op": "remove", "path": _pointer(k)} for k in before if k not in after
    ]
    for key, value in after.items():
        if key not in before:
            patch.append({"op": "add", "path": _pointer(key), "value": value})
        elif before[key] != value:
            patch.append({"op": "replace", "path": _pointer(key), "value": value})
    return patch


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(block.get("text", "")) for block in content if isinstance(block, Mapping)
        )
    return "" if content is None else str(content)


def agui_messages(messages: Sequence[Any], thread_id: str) -> list[Message]:
    """The thread's messages as AG-UI messages, with the ids the Agent Protocol gives them
    (the ids a client sends back to say which messages it already has); a user message with
    files (``metadata["files"]``) as text and file parts."""
    out: list[Message] = []
    for wire in messages_to_wire(messages, thread_id=thread_id):
        kind, mid = wire.get("type"), str(wire["id"])
        if kind == "human":
            extra = wire.get("response_metadata")
            files = extra.get(FILES) if isinstance(extra, Mapping) else None
            content = content_parts(_text(wire.get("content")), files)
            out.append(UserMessage(id=mid, content=content))
        elif kind == "ai":
            calls = [
                ToolCall(
                    id=str(call["id"]),
                    function=FunctionCall(
                        name=str(call["name"]), arguments=_json(call.get("args", {}))
                    ),
                )
                for call in wire.get("tool_calls") or ()
            ]
            text = _text(wire.get("content"))
            out.append(AssistantMessage(id=mid, content=text or None, tool_calls=calls or None))
        elif kind == "tool":
            out.append(
                ToolMessage(
                    id=mid,
                    content=_text(wire.get("content")),
                    tool_call_id=str(wire.get("tool_call_id", "")),
                )
            )
        elif kind == "system":
            out.append(SystemMessage(id=mid, content=_text(wire.get("content"))))
    return out


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def agui_interrupts(pending: Sequence[OurInterrupt], thread_id: str) -> list[Interrupt]:
    """The thread's pauses as AG-UI interrupts, ``reason`` one of AG-UI's core values where
    one fits: ``"tool_call"`` for a ``HumanInTheLoopHook``'s request (with the first call it
    holds back, and the ``responseSchema`` of AG-UI's approval shape), ``"input_required"``
    for any other ``interrupt()``; ``"graph_agent:client_tool"`` for a front-end tool's call
    (with that call). The pause's own value is in ``metadata["value"]``, answered by a
    resume entry's ``payload``."""
    out = []
    for pause in pending:
        value = to_jsonable(pause.value, thread_id=thread_id)
        reason, message, call_id = INPUT_REQUIRED, None, None
        if isinstance(value, str):
            message = value
        elif isinstance(value, Mapping):
            calls = value.get("tool_calls")
            if is_client_call(value):
                reason, call_id = CLIENT_TOOL_REASON, str(value.get("tool_call_id"))
            elif value.get("type") == "tool_approval" and isinstance(calls, list) and calls:
                reason = TOOL_CALL
                first = calls[0] if isinstance(calls[0], Mapping) else {}
                call_id = str(first["id"]) if first.get("id") else None
                if first.get("description"):
                    message = str(first["description"])
            elif isinstance(value.get("message"), str):
                message = value["message"]
        out.append(
            Interrupt(
                id=pause.id,
                reason=reason,
                message=message,
                tool_call_id=call_id,
                response_schema=approval_schema(value),
                metadata={"value": value},
            )
        )
    return out


class AguiEncoder:
    """The AG-UI events of one run (``thread_id``, ``run_id``), entry by entry of its log."""

    def __init__(self, thread_id: str, run_id: str, client_tools: Set[str] = frozenset()) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.client_tools = client_tools  # their results are the client's: not sent back
        self.failed = False
        self._state: dict[str, Any] | None = None
        self._calls: dict[tuple[str, ...], int] = {}  # model calls per namespace and task
        self._ids: dict[tuple[str, ...], str] = {}  # the answer's message id, by task
        self._open: set[tuple[str, ...]] = set()  # the tasks whose text message is open
        self._started: dict[tuple[str, ...], dict[int, str]] = {}  # streamed tool calls
        self._subagents: dict[tuple[str, ...], str] = {}
        self._steps: dict[str, int] = {}  # the root's open steps: tasks running each node
        self._hidden: set[tuple[str, ...]] = set()  # namespaces of graphs, not agents

    def start(self) -> list[BaseEvent]:
        return [RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)]

    def entry(self, entry: Entry) -> list[BaseEvent]:
        """The events one log entry gives."""
        if entry.kind == EVENT and isinstance(entry.data, RunEvent):
            return self.event(entry.data)
        if entry.kind in (STATE, BEFORE) and isinstance(entry.data, StateSnapshot):
            return self._state_events(entry.data)
        if entry.kind == FAILURE and not self.failed:
            self.failed = True
            error = entry.data
            text = error_text(error) if isinstance(error, BaseException) else str(error)
            code = type(error).__name__ if isinstance(error, BaseException) else None
            return [RunErrorEvent(message=text, code=code)]
        return []

    def _state_events(self, snapshot: StateSnapshot) -> list[BaseEvent]:
        state = state_of(snapshot.values, self.thread_id)
        before, self._state = self._state, state
        if before is None:
            return [StateSnapshotEvent(snapshot=state)]
        patch = state_delta(before, state)
        return [StateDeltaEvent.model_validate({"delta": patch})] if patch else []

    def _sub(self, ns: tuple[str, ...]) -> str | None:
        """The subagent run id events of ``ns`` carry (``None``: the run's own agent)."""
        while ns:
            found = self._subagents.get(ns)
            if found is not None:
                return found
            ns = ns[:-1]
        return None

    def event(self, event: RunEvent) -> list[BaseEvent]:
        """The events one of our run events gives."""
        ns = tuple(event.namespace)
        key = (*ns, event.task_id or "")
        sub = self._sub(ns)
        if isinstance(event, RunStart) and ns:
            if not event.agent:
                return []
            handle = str(uuid.uuid5(NAMESPACE_WIRE, f"{self.run_id}\x1f{'|'.join(ns)}"))
            self._subagents[ns] = handle
            return [
                SubagentStarted(
                    subagent_run_id=handle,
                    name=event.graph or ns[-1],
                    parent_tool_call_id=event.call_id or None,
                    parent_subagent_run_id=self._sub(ns[:-1]),
                )
            ]
        if isinstance(event, RunEnd) and ns and ns in self._subagents:
            handle = self._subagents.pop(ns)
            return [SubagentFinishedEvent(subagent_run_id=handle)]
        if isinstance(event, RunError) and ns and ns in self._subagents:
            handle = self._subagents.pop(ns)
            text = error_text(event.error) if event.error else "the sub-agent failed"
            return [SubagentErrorEvent(subagent_run_id=handle, message=text)]
        if ns and sub is None:
            return []  # a subgraph's own steps: its parent's step shows it
        if isinstance(event, (NodeStart, NodeEnd)) and not ns and event.node:
            return self._step(event.node, isinstance(event, NodeStart))
        if isinstance(event, ModelDelta):
            return self._delta(event, key, sub)
        if isinstance(event, ModelEnd):
            return self._model_end(event, key, sub)
        if isinstance(event, ToolEnd) and event.result is not None:
            if event.name in self.client_tools and not ns:
                return []
            result_id = str(
                uuid.uuid5(NAMESPACE_WIRE, f"{self.run_id}\x1fresult\x1f{event.call_id}")
            )
            return [
                ToolCallResultEvent(
                    message_id=result_id,
                    tool_call_id=event.call_id,
                    content=event.result or "",
                    role="tool",
                    subagent_run_id=sub,
                )
            ]
        if isinstance(event, OurCustom):
            data = to_jsonable(event.data, thread_id=self.thread_id)
            if isinstance(data, Mapping) and isinstance(data.get("name"), str) and "value" in data:
                return [CustomEvent(name=data["name"], value=data["value"], subagent_run_id=sub)]
            return [CustomEvent(name="emit", value=data, subagent_run_id=sub)]
        return []

    def _step(self, node: str, starts: bool) -> list[BaseEvent]:
        """A step per node, open while any of its tasks runs (AG-UI refuses a step opened
        twice: tasks sent to one node run at once)."""
        running = self._steps.get(node, 0)
        if starts:
            self._steps[node] = running + 1
            return [StepStartedEvent(step_name=node)] if running == 0 else []
        if running <= 1:
            self._steps.pop(node, None)
            return [StepFinishedEvent(step_name=node)] if running == 1 else []
        self._steps[node] = running - 1
        return []

    def _close(self, suspended: Sequence[str] | None) -> list[BaseEvent]:
        """The ends of what the run left open (an answer cut short by a cancel, the step of
        a node that paused, a sub-agent inside it): ``RUN_FINISHED`` may not come while
        anything is open. A sub-agent left open is suspended on the interrupts
        ``suspended`` (the run paused) or failed (``None``: the run was cancelled)."""
        out: list[BaseEvent] = []
        for key in sorted(self._open, key=len, reverse=True):
            out.append(
                TextMessageEndEvent(message_id=self._ids[key], subagent_run_id=self._sub(key[:-1]))
            )
        for key, calls in sorted(self._started.items(), key=lambda kv: len(kv[0]), reverse=True):
            sub = self._sub(key[:-1])
            out.extend(
                ToolCallEndEvent(tool_call_id=c, subagent_run_id=sub) for c in calls.values()
            )
        for _, handle in sorted(self._subagents.items(), key=lambda kv: len(kv[0]), reverse=True):
            if suspended is None:
                out.append(
                    SubagentErrorEvent(
                        subagent_run_id=handle, message="the run was cancelled", code="cancelled"
                    )
                )
            else:
                outcome = SubagentFinishedSuspendedOutcome(interrupt_ids=list(suspended))
                out.append(SubagentFinishedEvent(subagent_run_id=handle, outcome=outcome))
        out.extend(StepFinishedEvent(step_name=node) for node in self._steps)
        self._open.clear()
        self._started.clear()
        self._subagents.clear()
        self._steps.clear()
        return out

    def _message_id(self, key: tuple[str, ...]) -> str:
        found = self._ids.get(key)
        if found is None:
            call = self._calls.get(key, 0)
            found = stream_message_id(self.run_id, key[:-1], key[-1] or None, call)
            self._ids[key] = found
        return found

    def _delta(self, event: ModelDelta, key: tuple[str, ...], sub: str | None) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        mid = self._message_id(key)
        if event.text:
            if key not in self._open:
                self._open.add(key)
                out.append(
                    TextMessageStartEvent(message_id=mid, role="assistant", subagent_run_id=sub)
                )
            out.append(
                TextMessageContentEvent(message_id=mid, delta=event.text, subagent_run_id=sub)
            )
        fragment = event.tool_call_delta
        if fragment is not None:
            started = self._started.setdefault(key, {})
            index = getattr(fragment, "index", None)
            index = index if isinstance(index, int) else len(started)
            call_id = started.get(index)
            given = str(getattr(fragment, "id", None) or "")
            if call_id is None and given:
                call_id = started[index] = given
                out.append(
                    ToolCallStartEvent(
                        tool_call_id=call_id,
                        tool_call_name=str(getattr(fragment, "name", "")),
                        parent_message_id=mid,
                        subagent_run_id=sub,
                    )
                )
            arguments = getattr(fragment, "arguments", "")
            if call_id is not None and arguments:
                out.append(
                    ToolCallArgsEvent(tool_call_id=call_id, delta=arguments, subagent_run_id=sub)
                )
        return out

    def _model_end(self, event: ModelEnd, key: tuple[str, ...], sub: str | None) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        message = event.message
        text = message.answer if isinstance(message, OurAssistant) else ""
        opened = key in self._open
        mid = self._message_id(key)
        if not opened and text and event.error is None:  # not streamed: the whole answer
            out.append(TextMessageStartEvent(message_id=mid, role="assistant", subagent_run_id=sub))
            out.append(TextMessageContentEvent(message_id=mid, delta=text, subagent_run_id=sub))
            opened = True
        if opened:
            out.append(TextMessageEndEvent(message_id=mid, subagent_run_id=sub))
        started = set(self._started.pop(key, {}).values())
        for call in getattr(message, "tool_calls", ()) or ():
            if call.id not in started:
                out.append(
                    ToolCallStartEvent(
                        tool_call_id=call.id,
                        tool_call_name=call.name,
                        parent_message_id=mid,
                        subagent_run_id=sub,
                    )
                )
                if call.arguments:
                    out.append(
                        ToolCallArgsEvent(
                            tool_call_id=call.id, delta=call.arguments, subagent_run_id=sub
                        )
                    )
            out.append(ToolCallEndEvent(tool_call_id=call.id, subagent_run_id=sub))
        for call_id in started - {c.id for c in getattr(message, "tool_calls", ()) or ()}:
            out.append(ToolCallEndEvent(tool_call_id=call_id, subagent_run_id=sub))
        self._ids.pop(key, None)
        self._open.discard(key)
        self._calls[key] = self._calls.get(key, 0) + 1
        return out

    def finish(
        self, status: str, snapshot: StateSnapshot | None, error: str | None
    ) -> list[BaseEvent]:
        """The last events, once the run ended with ``status`` and its thread is at
        ``snapshot``: the ends of what the run left open, the messages snapshot, then
        ``RUN_FINISHED`` (success, interrupt or cancelled) or ``RUN_ERROR``."""
        if self.failed:  # RUN_ERROR was the last event
            return []
        history: list[BaseEvent] = []
        if snapshot is not None:
            messages = snapshot.values.get(MESSAGES)
            if isinstance(messages, (list, tuple)) and all(
                hasattr(m, "message_type") for m in messages
            ):
                history.append(
                    MessagesSnapshotEvent(messages=agui_messages(messages, self.thread_id))
                )
        if status in ("error", "timeout"):  # RUN_ERROR may come with anything open
            self.failed = True
            text = error or f"the run ended in {status}"
            return [*history, RunErrorEvent(message=text, code=status)]
        waiting = [i for i in snapshot.interrupts if i.when == "during"] if snapshot else []
        if status in ("cancelled", "interrupted"):
            outcome: Any = RunFinishedCancelledOutcome()
            closing = self._close(None)
        else:
            closing = self._close([i.id for i in waiting])
            if waiting and all(is_client_call(i.value) for i in waiting):
                calls = [str(i.value.get("tool_call_id")) for i in waiting]
                outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=calls)
            elif waiting:
                outcome = RunFinishedInterruptOutcome(
                    interrupts=agui_interrupts(waiting, self.thread_id)
                )
            else:
                outcome = RunFinishedSuccessOutcome()
        finished = RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=outcome)
        return [*closing, *history, finished]
