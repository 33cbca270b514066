"""The Agent Protocol's stream parts, as LangGraph's Agent Server sends them, from our run
events: ``RunStreamEncoder``, pure (no web framework, no I/O). The modes, event names and
SSE bytes are in ``_wire_stream``; the contract is what the official clients send and read
(``langgraph-sdk`` 0.4.14's source), and docs/serving.md says where we differ.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeGuard

from ..events import (
    CheckpointEvent,
    CustomEvent,
    InterruptEvent,
    ModelDelta,
    ModelEnd,
    ModelStart,
    NodeEnd,
    NodeError,
    NodeStart,
    RunEnd,
    RunError,
    RunEvent,
)
from ..graph import Command, Interrupt, StateSnapshot
from ..messages import AssistantMessage, Message, ToolCall, ToolResponseMessage
from ._wire_messages import (
    MESSAGE_TYPES,
    MessagesMemo,
    WireDict,
    error_text,
    error_to_wire,
    interrupt_to_wire,
    to_jsonable,
    usage_to_wire,
)
from ._wire_state import (
    INTERRUPT_KEY,
    checkpoint_to_wire,
    interrupts_to_wire,
    tasks_to_wire,
    values_to_wire,
)
from ._wire_stream import event_name, run_event_to_wire, stream_message_id

__all__ = ["Chunk", "RunStreamEncoder", "snapshots_needed"]

Chunk = tuple[str, Any]
"""One stream part: the SSE ``event:`` name and its ``data`` (JSON-able)."""


_STATE_MODES = frozenset(
    {"values", "updates", "messages", "messages-tuple", "checkpoints", "debug"}
)


def snapshots_needed(modes: Iterable[str]) -> bool:
    """Whether a stream of ``modes`` needs the thread's state at each checkpoint (see
    ``RunStreamEncoder.needs_snapshots``)."""
    return not _STATE_MODES.isdisjoint(modes)


def _messages_in(value: Any) -> TypeGuard[Sequence[Message]]:
    return (
        isinstance(value, (list, tuple))
        and bool(value)
        and all(isinstance(m, MESSAGE_TYPES) for m in value)
    )


@dataclasses.dataclass
class _Streamed:
    """One model call being streamed: its chunks' id and metadata, and what they added up to
    (for ``messages/partial``)."""

    id: str
    metadata: WireDict
    model: str
    text: str = ""
    calls: dict[int, WireDict] = dataclasses.field(default_factory=dict)
    deltas: int = 0


class RunStreamEncoder:
    """Turns one run's events into the stream parts of the modes a client asked for.

    Feed it, in order: ``start()`` (the ``metadata`` part), for a run that continues its
    thread ``resume(snapshot)`` (the state before the run), every ``RunEvent`` of the run
    (``event(ev)``), and after each ``CheckpointEvent`` the snapshot at that checkpoint
    (``checkpoint(snapshot, namespace=ev.namespace)``: ``values``, ``checkpoints`` and
    ``debug`` need the state, which the events do not carry); on failure ``error(exc)``.
    Each call returns the parts to send, ``(event name, data)``, data JSON-able.

    Parts per mode, as LangGraph's server sends them:

    - ``values``: the state after the input and after each step; when the run pauses on
      ``interrupt()``, the state with ``"__interrupt__": [...]``.
    - ``updates``: ``{node: update}`` per finished task; at a pause
      ``{"__interrupt__": [...]}`` (empty for ``interrupt_before``/``after``).
    - ``messages-tuple`` (sent as ``messages``): ``[chunk, metadata]`` per streamed piece of
      a model's answer (an ``AIMessageChunk`` dict), and ``[message, metadata]`` for each
      message a node wrote that was not streamed (tool results, a return-direct answer).
    - ``messages``: ``messages/metadata`` ``{id: {"metadata": ...}}`` the first time a
      message is seen, then ``messages/partial`` ``[the chunks so far, added up]`` or
      ``messages/complete`` ``[message]``.
    - ``custom``: what a node handed to ``emit()``.
    - ``tasks``: ``{id, name, input, triggers}`` when a task starts, ``{id, name, error,
      result, interrupts}`` when it ends, fails or pauses.
    - ``checkpoints``: ``{config, parent_config, values, metadata, next, tasks}`` per
      checkpoint; ``debug``: the tasks and checkpoints parts wrapped in ``{step, timestamp,
      type, payload}``.
    - ``run_events``: ``run_event_to_wire(ev)`` for every event.

    A subgraph's parts come only with ``subgraphs`` (named ``mode|node:task|...``); its
    model's messages too, as in LangGraph.
    """

    def __init__(
        self,
        *,
        modes: Iterable[str],
        thread_id: str,
        run_id: str,
        subgraphs: bool = False,
        metadata: Mapping[str, Any] | None = None,
        attempt: int = 1,
    ) -> None:
        self.modes = frozenset(modes)
        self.thread_id = thread_id
        self.run_id = run_id
        self.subgraphs = subgraphs
        self.metadata = dict(metadata or {})
        self.attempt = attempt
        self._steps: dict[tuple[str, ...], int] = {}
        self._values: dict[tuple[str, ...], Mapping[str, Any]] = {}
        self._calls: dict[tuple[tuple[str, ...], str | None], int] = {}
        self._streaming: dict[tuple[tuple[str, ...], str | None], _Streamed] = {}
        self._streamed: dict[tuple[tuple[str, ...], str | None], list[AssistantMessage]] = {}
        self._providers: dict[tuple[tuple[str, ...], str | None], str] = {}
        self._started: dict[tuple[str, ...], dict[str, str]] = {}  # task id -> node, not ended
        self._seen_ids: set[str] = set()
        # the message lists of each namespace's state, converted once per message per run
        self._memos: dict[tuple[tuple[str, ...], str], MessagesMemo] = {}

    @property
    def needs_snapshots(self) -> bool:
        """Whether ``checkpoint()`` must be called after each ``CheckpointEvent``: for the
        modes that show the state, and for those that show messages (an appended message's
        id counts the messages already in the state)."""
        return snapshots_needed(self.modes)

    # -- parts ---------------------------------------------------------------------------

    def _visible(self, namespace: Sequence[str]) -> bool:
        return self.subgraphs or not namespace

    def _name(self, mode: str, namespace: Sequence[str]) -> str:
        return event_name(mode, namespace, subgraphs=self.subgraphs)

    def start(self) -> list[Chunk]:
        """The first part of every stream: ``metadata`` with the run's id."""
        return [("metadata", {"run_id": self.run_id, "attempt": self.attempt})]

    def error(self, error: BaseException) -> list[Chunk]:
        """The last part of a failed run."""
        return [("error", error_to_wire(error))]

    def event(self, event: RunEvent) -> list[Chunk]:
        """The parts one run event gives."""
        ns = tuple(event.namespace)
        parts: list[Chunk] = []
        if "run_events" in self.modes and self._visible(ns):
            parts.append(
                (self._name("run_events", ns), run_event_to_wire(event, thread_id=self.thread_id))
            )
        if isinstance(event, CheckpointEvent):
            self._steps[ns] = event.step
        elif isinstance(event, NodeStart):
            if event.task_id is not None and event.node is not None:
                self._started.setdefault(ns, {})[event.task_id] = event.node
            parts += self._task_start(event, ns)
        elif isinstance(event, NodeEnd):
            if event.task_id is not None:
                self._started.get(ns, {}).pop(event.task_id, None)
            parts += self._node_end(event, ns)
        elif isinstance(event, NodeError):
            if event.task_id is not None:
                self._started.get(ns, {}).pop(event.task_id, None)
            parts += self._task_result(event, ns, error=event.error)
        elif isinstance(event, InterruptEvent):
            parts += self._paused_task(event, ns)
        elif isinstance(event, ModelStart):
            parts += self._model_start(event, ns)
        elif isinstance(event, ModelDelta):
            parts += self._model_delta(event, ns)
        elif isinstance(event, ModelEnd):
            parts += self._model_end(event, ns)
        elif isinstance(event, CustomEvent):
            if "custom" in self.modes and self._visible(ns):
                parts.append(
                    (self._name("custom", ns), to_jsonable(event.data, thread_id=self.thread_id))
                )
        elif isinstance(event, (RunEnd, RunError)):
            self._started.pop(ns, None)
        return parts

    def resume(self, snapshot: StateSnapshot) -> list[Chunk]:
        """The first parts of a run that continues its thread (``input`` ``None`` or a
        ``Command``), which writes no input checkpoint: the state as it stands (LangGraph sends
        it as the first ``values``), without the pause it answers."""
        self._steps[()] = snapshot.step
        self._values[()] = snapshot.values
        if "values" not in self.modes:
            return []
        wire = values_to_wire(snapshot.values, thread_id=self.thread_id, memo=self._memo(()))
        return [("values", wire)]

    def _memo(self, ns: tuple[str, ...]) -> Callable[[str], MessagesMemo]:
        def memo(key: str) -> MessagesMemo:
            found = self._memos.get((ns, key))
            if found is None:
                found = self._memos[(ns, key)] = MessagesMemo(self.thread_id)
            return found

        return memo

    def checkpoint(self, snapshot: StateSnapshot, *, namespace: Sequence[str] = ()) -> list[Chunk]:
        """The parts of a checkpoint (``snapshot`` read at the ``CheckpointEvent``'s id)."""
        ns = tuple(namespace)
        self._steps[ns] = snapshot.step
        self._values[ns] = snapshot.values
        if not self._visible(ns):
            return []
        parts: list[Chunk] = []
        source = snapshot.metadata.get("source")
        waiting = [i for i in snapshot.interrupts if i.when == "during"]
        if "values" in self.modes and source in ("input", "loop"):
            parts.append(
                (
                    self._name("values", ns),
                    values_to_wire(snapshot.values, thread_id=self.thread_id, memo=self._memo(ns)),
                )
            )
        if snapshot.interrupts and source in ("input", "loop", "interrupt"):
            if "updates" in self.modes:
                pause = {INTERRUPT_KEY: interrupts_to_wire(waiting, thread_id=self.thread_id)}
                parts.append((self._name("updates", ns), pause))
            if "values" in self.modes and waiting:
                wire = values_to_wire(
                    snapshot.values,
                    thread_id=self.thread_id,
                    interrupts=waiting,
                    memo=self._memo(ns),
                )
                parts.append((self._name("values", ns), wire))
        if "checkpoints" in self.modes or "debug" in self.modes:
            payload = self._checkpoint_payload(snapshot)
            if "checkpoints" in self.modes:
                parts.append((self._name("checkpoints", ns), payload))
            if "debug" in self.modes:
                debug = {
                    **payload,
                    "checkpoint": checkpoint_to_wire(self.thread_id, snapshot.checkpoint_id, ns),
                    "parent_checkpoint": (
                        checkpoint_to_wire(self.thread_id, snapshot.parent_id, ns)
                        if snapshot.parent_id
                        else None
                    ),
                }
                parts.append(
                    (self._name("debug", ns), self._debug("checkpoint", snapshot.step, debug))
                )
        return parts

    # -- helpers -------------------------------------------------------------------------

    def _config(self, checkpoint_id: str | None, ns: tuple[str, ...]) -> WireDict | None:
        if checkpoint_id is None:
            return None
        return {
            "configurable": {
                "thread_id": self.thread_id,
                "checkpoint_ns": "|".join(ns),
                "checkpoint_id": checkpoint_id,
            }
        }

    def _checkpoint_payload(self, snapshot: StateSnapshot) -> WireDict:
        ns = tuple(snapshot.namespace)
        tasks = [
            {
                "id": t["id"],
                "name": t["name"],
                "interrupts": t["interrupts"],
                "state": t["checkpoint"] and {"configurable": t["checkpoint"]},
            }
            for t in tasks_to_wire(snapshot, self.thread_id)
        ]
        return {
            "config": self._config(snapshot.checkpoint_id, ns),
            "parent_config": self._config(snapshot.parent_id, ns),
            "values": values_to_wire(
                snapshot.values, thread_id=self.thread_id, memo=self._memo(ns)
            ),
            "metadata": {**to_jsonable(dict(snapshot.metadata)), "step": snapshot.step},
            "next": list(snapshot.next),
            "tasks": tasks,
        }

    def _debug(self, kind: str, step: int, payload: Any) -> WireDict:
        stamp = datetime.now().astimezone().isoformat()
        return {"step": step, "timestamp": stamp, "type": kind, "payload": payload}

    def _step(self, ns: tuple[str, ...]) -> int:
        """The step a task of ``ns`` runs in (LangGraph's ``langgraph_step``)."""
        return self._steps.get(ns, 0) + 1

    def _task_parts(self, ns: tuple[str, ...], kind: str, payload: WireDict) -> list[Chunk]:
        if not self._visible(ns):
            return []
        parts: list[Chunk] = []
        if "tasks" in self.modes:
            parts.append((self._name("tasks", ns), payload))
        if "debug" in self.modes:
            parts.append((self._name("debug", ns), self._debug(kind, self._step(ns), payload)))
        return parts

    def _task_start(self, event: NodeStart, ns: tuple[str, ...]) -> list[Chunk]:
        if not {"tasks", "debug"} & self.modes:
            return []
        payload: WireDict = {"id": event.task_id, "name": event.node, "input": None, "triggers": []}
        return self._task_parts(ns, "task", payload)

    def _task_result(
        self,
        event: RunEvent,
        ns: tuple[str, ...],
        *,
        result: Any = None,
        error: BaseException | None = None,
        interrupts: list[WireDict] | None = None,
        task_id: str | None = None,
        node: str | None = None,
    ) -> list[Chunk]:
        if not {"tasks", "debug"} & self.modes:
            return []
        payload = {
            "id": task_id or event.task_id,
            "name": node or event.node,
            "error": None if error is None else f"{type(error).__name__}({error_text(error)})",
            "result": result if result is not None else {},
            "interrupts": interrupts or [],
        }
        return self._task_parts(ns, "task_result", payload)

    def _paused_task(self, event: InterruptEvent, ns: tuple[str, ...]) -> list[Chunk]:
        """A task that paused on ``interrupt()``: its result, with the interrupt (the task is
        the one of ``ns`` that started and did not end, running the node that paused, or the
        subgraph it paused in)."""
        interrupt = event.interrupt
        if not isinstance(interrupt, Interrupt) or interrupt.when != "during":
            return []
        inner = tuple(interrupt.namespace)[len(ns) :]
        node, task_id = inner[0].partition(":")[::2] if inner else (interrupt.node, "")
        started = self._started.get(ns, {})
        if not task_id:
            task_id = next((t for t, n in started.items() if n == node), "")
        if not task_id:
            return []
        started.pop(task_id, None)
        wire = [interrupt_to_wire(interrupt, thread_id=self.thread_id)]
        return self._task_result(event, ns, interrupts=wire, task_id=task_id, node=node)

    def _update_to_wire(self, update: Any, ns: tuple[str, ...]) -> Any:
        if isinstance(update, Command):
            update = update.update
        if not isinstance(update, Mapping):
            return to_jsonable(update, thread_id=self.thread_id)
        state = self._values.get(ns, {})
        wire: WireDict = {}
        for key, value in update.items():
            if _messages_in(value):
                before = state.get(key)
                memo = self._memo(ns)(str(key))
                wire[str(key)] = memo.convert_added(value, before if _messages_in(before) else ())
            else:
                wire[str(key)] = to_jsonable(value, thread_id=self.thread_id)
        return wire

    def _node_end(self, event: NodeEnd, ns: tuple[str, ...]) -> list[Chunk]:
        parts: list[Chunk] = []
        wire = None
        if self._visible(ns) and self.modes & {
            "updates",
            "tasks",
            "debug",
            "messages",
            "messages-tuple",
        }:
            wire = self._update_to_wire(event.update, ns)
        if wire is not None and "updates" in self.modes:
            parts.append((self._name("updates", ns), {event.node: wire}))
        if wire is not None:
            parts += self._task_result(event, ns, result=wire if isinstance(wire, dict) else None)
        if wire is not None and self.modes & {"messages", "messages-tuple"}:
            parts += self._node_messages(event, ns, wire)
        self._streamed.pop((ns, event.task_id), None)
        return parts

    def _node_messages(self, event: NodeEnd, ns: tuple[str, ...], wire: Any) -> list[Chunk]:
        """The messages a node wrote that were not streamed, as complete messages."""
        if not isinstance(wire, dict):
            return []
        update = event.update.update if isinstance(event.update, Command) else event.update
        streamed = self._streamed.get((ns, event.task_id), [])
        metadata = self._message_metadata(event.node, event.task_id, ns, "")
        parts: list[Chunk] = []
        for key, value in wire.items():
            ours = update.get(key) if isinstance(update, Mapping) else None
            if not _messages_in(ours):
                continue
            for message, dicts in zip(ours, _grouped(ours, value)):
                if isinstance(message, AssistantMessage) and any(
                    _same_answer(message, s) for s in streamed
                ):
                    continue
                for one in dicts:
                    parts += self._complete(one, metadata)
        return parts

    def _complete(self, message: WireDict, metadata: WireDict) -> list[Chunk]:
        parts: list[Chunk] = []
        if "messages-tuple" in self.modes:
            parts.append(("messages", [message, metadata]))
        if "messages" in self.modes:
            if message["id"] not in self._seen_ids:
                self._seen_ids.add(message["id"])
                parts.append(("messages/metadata", {message["id"]: {"metadata": metadata}}))
            parts.append(("messages/complete", [message]))
        return parts

    def _message_metadata(
        self, node: str | None, task_id: str | None, ns: tuple[str, ...], model: str
    ) -> WireDict:
        task_ns = "|".join((*ns, f"{node}:{task_id}"))
        metadata: WireDict = {
            **to_jsonable(self.metadata),
            "run_id": self.run_id,
            "thread_id": self.thread_id,
            "langgraph_step": self._step(ns),
            "langgraph_node": node,
            "langgraph_triggers": [],
            "langgraph_path": ["__pregel_pull", node],
            "langgraph_checkpoint_ns": task_ns,
            "checkpoint_ns": task_ns,
        }
        if model:
            metadata["ls_provider"] = self._providers.get((ns, task_id), "")
            metadata["ls_model_name"] = model
            metadata["ls_model_type"] = "chat"
        return metadata

    def _model_start(self, event: ModelStart, ns: tuple[str, ...]) -> list[Chunk]:
        key = (ns, event.task_id)
        call = self._calls.get(key, 0)
        self._calls[key] = call + 1
        self._providers[key] = event.provider
        if self._visible(ns) and self.modes & {"messages", "messages-tuple"}:
            self._streaming[key] = _Streamed(
                id=stream_message_id(self.run_id, ns, event.task_id, call),
                metadata=self._message_metadata(event.node, event.task_id, ns, event.model),
                model=event.model,
            )
        return []

    def _model_delta(self, event: ModelDelta, ns: tuple[str, ...]) -> list[Chunk]:
        streamed = self._streaming.get((ns, event.task_id))
        if streamed is None:
            return []
        streamed.deltas += 1
        chunk = _chunk(streamed.id, event.text, _call_chunks(event.tool_call_delta))
        parts: list[Chunk] = []
        if "messages-tuple" in self.modes:
            parts.append(("messages", [chunk, streamed.metadata]))
        if "messages" in self.modes:
            streamed.text += event.text
            for piece in chunk["tool_call_chunks"]:
                _add_call_chunk(streamed.calls, piece)
            if streamed.id not in self._seen_ids:
                self._seen_ids.add(streamed.id)
                parts.append(("messages/metadata", {streamed.id: {"metadata": streamed.metadata}}))
            whole = _chunk(streamed.id, streamed.text, list(streamed.calls.values()))
            parts.append(("messages/partial", [whole]))
        return parts

    def _model_end(self, event: ModelEnd, ns: tuple[str, ...]) -> list[Chunk]:
        key = (ns, event.task_id)
        streamed = self._streaming.pop(key, None)
        if streamed is None or streamed.deltas == 0 or event.error is not None:
            return []  # not streamed: the node's update shows the answer, complete
        if isinstance(event.message, AssistantMessage):
            self._streamed.setdefault(key, []).append(event.message)
        usage = usage_to_wire(_usage_dict(event.usage))
        if usage is None or "messages-tuple" not in self.modes:
            return []
        last = _chunk(streamed.id, "", [], usage=usage, model=streamed.model)
        return [("messages", [last, streamed.metadata])]


def _usage_dict(usage: Any) -> Any:
    if usage is None or isinstance(usage, Mapping):
        return usage
    fields = ("prompt_tokens", "completion_tokens", "total_tokens")
    return {f: getattr(usage, f, None) for f in fields}


def _grouped(messages: Sequence[Message], wire: Sequence[WireDict]) -> list[list[WireDict]]:
    """``wire`` (from ``messages_to_wire(messages)``) split back per message."""
    out: list[list[WireDict]] = []
    at = 0
    for message in messages:
        size = len(message.responses) if isinstance(message, ToolResponseMessage) else 1
        out.append(list(wire[at : at + size]))
        at += size
    return out


def _same_answer(message: AssistantMessage, streamed: AssistantMessage) -> bool:
    return message.text == streamed.text and [c.id for c in message.tool_calls] == [
        c.id for c in streamed.tool_calls
    ]


def _call_chunks(delta: Any) -> list[WireDict]:
    """A ``ModelDelta``'s tool-call fragment as LangChain's ``tool_call_chunks`` (only the
    first fragment of a call carries its id and name)."""
    if not isinstance(delta, ToolCall):
        return []
    return [
        {
            "name": delta.name or None,
            "args": delta.arguments or None,
            "id": delta.id or None,
            "index": delta.index,
            "type": "tool_call_chunk",
        }
    ]


def _add_call_chunk(calls: dict[int, WireDict], piece: WireDict) -> None:
    index = piece["index"] if isinstance(piece["index"], int) else len(calls)
    whole = calls.get(index)
    if whole is None:
        calls[index] = dict(piece)
        return
    whole["args"] = (whole["args"] or "") + (piece["args"] or "")
    whole["name"] = whole["name"] or piece["name"]
    whole["id"] = whole["id"] or piece["id"]


def _chunk(
    message_id: str,
    text: str,
    call_chunks: list[WireDict],
    *,
    usage: WireDict | None = None,
    model: str = "",
) -> WireDict:
    """An ``AIMessageChunk`` dict, as LangChain dumps one: the fragments in
    ``tool_call_chunks``, and in ``tool_calls`` those whose arguments are whole JSON objects
    (clients rebuild the calls from the fragments as they add chunks up)."""
    calls: list[WireDict] = []
    for piece in call_chunks:
        try:
            args = json.loads(piece["args"]) if piece["args"] else {}
        except ValueError:
            continue
        if isinstance(args, dict) and piece["name"]:
            calls.append(
                {"name": piece["name"], "args": args, "id": piece["id"], "type": "tool_call"}
            )
    return {
        "content": text,
        "additional_kwargs": {},
        "response_metadata": {"model_name": model} if model else {},
        "type": "AIMessageChunk",
        "name": None,
        "id": message_id,
        "tool_calls": calls,
        "invalid_tool_calls": [],
        "usage_metadata": usage,
        "tool_call_chunks": call_chunks,
        "chunk_position": "last" if usage is not None else None,
    }
