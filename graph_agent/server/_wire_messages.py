"""The Agent Protocol's JSON, as LangGraph's Agent Server speaks it: values and messages.

Pure conversions, no web framework and no I/O: any value as plain JSON (``to_jsonable``;
interrupts and errors as the ``langgraph-sdk`` clients read them), our messages as LangChain's
message dicts (what clients send back is read by ``_wire_inbound``). The contract is what the
official clients send and read (``langgraph-sdk`` 0.4.14's source, ``langchain_core``'s
message dumps).

Message ids. Our messages have no id field; a message's id on the wire is, in order:

1. the id it carries in ``metadata["id"]`` (a ``ToolResponseMessage``: ``metadata["ids"]``, one
   per response) -- what a client sent with it is kept there by ``messages_from_wire``;
2. otherwise an id derived from the thread, the message's content and its occurrence: the
   UUID-5 of (thread id, how many identical messages come before it in the list, its wire dict
   without the id). The same message in the same thread gets the same id every time
   ``values``, ``history`` or ``updates`` are read (``updates`` pass the messages already in the
   state as ``before``, so an appended message gets the id it will have in ``values``); two
   identical messages ("yes", "yes") get different ids. It changes only when an identical
   message before it is removed.

A streamed answer's chunks cannot carry the derived id (the content is not known yet): they get
an id of their own (``_wire_stream.stream_message_id``), and the answer then appears in
``values`` under its derived id. Giving the agent's answers an id when they are made
(``metadata["id"]``) would make the two equal.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import math
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any, Final

from pydantic import BaseModel

from ..graph import Command, Interrupt, Send
from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from ..runs import HIDDEN_MESSAGE, error_text

__all__ = [
    "HIDDEN_MESSAGE",
    "MESSAGE_TYPES",
    "META_ID",
    "META_IDS",
    "META_NAME",
    "META_USAGE",
    "NAMESPACE_WIRE",
    "OWN_META_KEYS",
    "MessagesMemo",
    "WireDict",
    "error_text",
    "error_to_wire",
    "interrupt_to_wire",
    "message_to_wire",
    "messages_to_wire",
    "to_jsonable",
    "usage_to_wire",
]

WireDict = dict[str, Any]

# Ours, for derived message, task and stream-message ids.
NAMESPACE_WIRE: Final = uuid.UUID("0b3f9c52-29a1-5e7c-9d2e-6a1f0c4e8b29")

# Metadata keys ``message_to_wire`` maps to fields of their own (not ``response_metadata``).
META_ID, META_IDS, META_NAME, META_USAGE = "id", "ids", "name", "usage"
OWN_META_KEYS: Final = frozenset({META_ID, META_IDS, META_NAME, META_USAGE})


# -- JSON-able values -----------------------------------------------------------------------


def to_jsonable(value: Any, *, thread_id: str = "") -> Any:
    """``value`` as plain JSON data: messages become LangChain message dicts (a list of
    messages gets ids as ``messages_to_wire`` gives them), interrupts ``{value, id}``,
    pydantic models and dataclasses dicts, tuples and sets lists, datetimes ISO strings,
    bytes base64, NaN and infinities ``None``; anything else its ``str``."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, thread_id=thread_id) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(item, MESSAGE_TYPES) for item in value):
            return messages_to_wire(value, thread_id=thread_id)
        return [to_jsonable(item, thread_id=thread_id) for item in value]
    if isinstance(value, MESSAGE_TYPES):
        dicts = message_to_wire(value, thread_id=thread_id)
        return dicts[0] if len(dicts) == 1 else dicts
    if isinstance(value, (set, frozenset)):
        return [to_jsonable(item, thread_id=thread_id) for item in value]
    if isinstance(value, Interrupt):
        return interrupt_to_wire(value, thread_id=thread_id)
    if isinstance(value, Command):
        return _command_to_wire(value, thread_id)
    if isinstance(value, Send):
        return {"node": value.node, "args": to_jsonable(value.arg, thread_id=thread_id)}
    if isinstance(value, BaseException):
        return error_to_wire(value)
    if isinstance(value, BaseModel):
        return to_jsonable(value.model_dump(mode="json"), thread_id=thread_id)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return to_jsonable(fields, thread_id=thread_id)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value, thread_id=thread_id)
    return str(value)


def _command_to_wire(command: Command, thread_id: str) -> WireDict:
    wire: WireDict = {}
    if command.update is not None:
        wire["update"] = to_jsonable(command.update, thread_id=thread_id)
    if command.goto is not None:
        wire["goto"] = to_jsonable(command.goto_targets(), thread_id=thread_id)
    if command.has_resume:
        wire["resume"] = to_jsonable(command.resume, thread_id=thread_id)
    return wire


# -- interrupts and errors (in values, states and streams) ---------------------------------


def interrupt_to_wire(interrupt: Interrupt, *, thread_id: str = "") -> WireDict:
    """``{"value": ..., "id": ...}``: the SDK's ``Interrupt`` (LangGraph dropped ``ns``,
    ``when`` and ``resumable`` from it; ``response_schema`` we have none of)."""
    return {"value": to_jsonable(interrupt.value, thread_id=thread_id), "id": interrupt.id}


def error_to_wire(
    error: BaseException, *, reveal: Callable[[BaseException], bool] | None = None
) -> WireDict:
    """``{"error": <class name>, "message": ...}``: the ``error`` SSE event's data and a
    ``runs.wait`` body's ``__error__``. The message is ``error_text(error)``, or with
    ``reveal``, the error's own when ``reveal(error)`` and ``HIDDEN_MESSAGE`` otherwise."""
    if reveal is None:
        message = error_text(error)
    else:
        message = str(error) if reveal(error) else HIDDEN_MESSAGE
    return {"error": type(error).__name__, "message": message}


# -- messages: ours -> LangChain's dicts ----------------------------------------------------

MESSAGE_TYPES: Final = (UserMessage, AssistantMessage, SystemMessage, ToolResponseMessage)


def message_to_wire(message: Message, *, thread_id: str = "") -> list[WireDict]:
    """``message`` as LangChain message dicts: one, or one ``"tool"`` dict per response of a
    ``ToolResponseMessage``. Ids as the module says (this message alone in its list)."""
    return messages_to_wire((message,), thread_id=thread_id)


def messages_to_wire(
    messages: Iterable[Message], *, thread_id: str = "", before: Iterable[Message] = ()
) -> list[WireDict]:
    """``messages`` as LangChain message dicts (a ``ToolResponseMessage`` gives one per
    response), each with its id. ``before`` are the messages that precede these in the state
    (for the occurrence count of derived ids: pass the state's messages when converting a
    node's appended ``update``, so they get the ids ``values`` will give them)."""
    counts: dict[str, int] = {}
    for dicts in map(_dicts_of, before):
        for wire, _ in dicts:
            key = _fingerprint(wire)
            counts[key] = counts.get(key, 0) + 1
    out: list[WireDict] = []
    for dicts in map(_dicts_of, messages):
        for wire, given in dicts:
            key = _fingerprint(wire)
            seen = counts.get(key, 0)
            counts[key] = seen + 1
            wire["id"] = given if given else _derived_id(thread_id, seen, key)
            out.append(wire)
    return out


# one message's dicts (without ids yet), each with the id it was given and its fingerprint
_Converted = list[tuple[WireDict, "str | None", str]]


def _converted(message: Message) -> _Converted:
    return [(wire, given, _fingerprint(wire)) for wire, given in _dicts_of(message)]


class MessagesMemo:
    """``messages_to_wire`` for the successive states of one message list in one thread (a
    run's ``values``, step after step): the messages a state shares with the one before (its
    prefix, equal message by message) keep their dicts, and only the new ones are converted.
    The dicts it returns share their nested parts between calls: read them, do not change
    them."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self._messages: list[Message] = []
        self._converted: list[_Converted] = []
        self._ids: dict[tuple[int, str], str] = {}
        # what ``convert_added`` converted last: the next state holds it after its prefix
        self._added: list[tuple[Message, _Converted]] = []

    def _update(self, messages: Sequence[Message]) -> list[_Converted]:
        old = self._messages
        same, most = 0, min(len(old), len(messages))
        while same < most and (messages[same] is old[same] or messages[same] == old[same]):
            same += 1
        if same < len(messages) or same < len(old):
            added = iter(self._added)
            fresh = []
            for message in messages[same:]:
                known = next(added, None)
                if known is not None and (known[0] is message or known[0] == message):
                    fresh.append(known[1])
                else:
                    fresh.append(_converted(message))
                    added = iter(())
            self._converted = self._converted[:same] + fresh
            self._messages = list(messages)
        return self._converted

    def _counts(self, converted: Iterable[_Converted]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for dicts in converted:
            for _, _, key in dicts:
                counts[key] = counts.get(key, 0) + 1
        return counts

    def convert(self, messages: Sequence[Message]) -> list[WireDict]:
        """What ``messages_to_wire(messages, thread_id=...)`` gives."""
        return self._with_ids(self._update(messages), {})

    def convert_added(self, added: Sequence[Message], state: Sequence[Message]) -> list[WireDict]:
        """What ``messages_to_wire(added, thread_id=..., before=state)`` gives (a node's
        update, ids counted after the state's messages)."""
        counts = self._counts(self._update(state))
        self._added = [(m, _converted(m)) for m in added]
        return self._with_ids([converted for _, converted in self._added], counts)

    def _with_ids(self, converted: Iterable[_Converted], counts: dict[str, int]) -> list[WireDict]:
        out: list[WireDict] = []
        for dicts in converted:
            for wire, given, key in dicts:
                seen = counts.get(key, 0)
                counts[key] = seen + 1
                if given:
                    out.append({**wire, "id": given})
                    continue
                derived = self._ids.get((seen, key))
                if derived is None:
                    derived = self._ids[(seen, key)] = _derived_id(self.thread_id, seen, key)
                out.append({**wire, "id": derived})
        return out


def _derived_id(thread_id: str, occurrence: int, fingerprint: str) -> str:
    return str(uuid.uuid5(NAMESPACE_WIRE, f"{thread_id}\x1f{occurrence}\x1f{fingerprint}"))


def _fingerprint(wire: Mapping[str, Any]) -> str:
    return json.dumps(
        {k: v for k, v in wire.items() if k != "id"},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )


def _given_id(metadata: Mapping[str, Any]) -> str | None:
    given = metadata.get(META_ID)
    return given if isinstance(given, str) and given else None


def _rest(metadata: Mapping[str, Any]) -> WireDict:
    """The metadata that goes to ``response_metadata`` (the keys with fields of their own
    left out)."""
    return {str(k): to_jsonable(v) for k, v in metadata.items() if k not in OWN_META_KEYS}


def _name(metadata: Mapping[str, Any]) -> str | None:
    name = metadata.get(META_NAME)
    return name if isinstance(name, str) else None


def _dicts_of(message: Message) -> list[tuple[WireDict, str | None]]:
    """The wire dicts of ``message`` (without ids yet), each with the id it was given."""
    if isinstance(message, ToolResponseMessage):
        return _tool_dicts(message)
    metadata = message.metadata
    wire: WireDict = {
        "content": message.text,
        "additional_kwargs": {},
        "response_metadata": _rest(metadata),
        "type": "",
        "name": _name(metadata),
        "id": None,
    }
    if isinstance(message, UserMessage):
        wire["type"] = "human"
    elif isinstance(message, SystemMessage):
        wire["type"] = "system"
    elif isinstance(message, AssistantMessage):
        wire["type"] = "ai"
        if message.refusal is not None:
            wire["additional_kwargs"]["refusal"] = message.refusal
        valid, invalid = _tool_calls_to_wire(message.tool_calls)
        wire["tool_calls"] = valid
        wire["invalid_tool_calls"] = invalid
        wire["usage_metadata"] = usage_to_wire(metadata.get(META_USAGE))
    else:  # pragma: no cover - Message is a closed union
        raise TypeError(f"not a message: {message!r}")
    return [(wire, _given_id(metadata))]


def _tool_dicts(message: ToolResponseMessage) -> list[tuple[WireDict, str | None]]:
    ids = message.metadata.get(META_IDS)
    given: Sequence[Any] = ids if isinstance(ids, (list, tuple)) else ()
    rest = _rest(message.metadata)
    out: list[tuple[WireDict, str | None]] = []
    for i, response in enumerate(message.responses):
        wire: WireDict = {
            "content": response.response_data,
            "additional_kwargs": {},
            # the batch's metadata rides on its first response (messages_from_wire merges
            # the responses of a batch back into one message, and its metadata with them)
            "response_metadata": rest if i == 0 else {},
            "type": "tool",
            "name": response.name,
            "id": None,
            "tool_call_id": response.id,
            "artifact": None,
            "status": "success",
        }
        one = given[i] if i < len(given) else None
        out.append((wire, one if isinstance(one, str) and one else None))
    return out


def _tool_calls_to_wire(calls: Iterable[ToolCall]) -> tuple[list[WireDict], list[WireDict]]:
    """LangChain's ``tool_calls`` (arguments parsed into a dict) and ``invalid_tool_calls``
    (arguments that are not a JSON object, kept as they came)."""
    valid: list[WireDict] = []
    invalid: list[WireDict] = []
    for call in calls:
        try:
            args = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError as error:
            problem = f"arguments are not JSON: {error}"
        else:
            if isinstance(args, dict):
                valid.append({"name": call.name, "args": args, "id": call.id, "type": "tool_call"})
                continue
            problem = f"arguments are not a JSON object but {type(args).__name__}"
        invalid.append(
            {
                "name": call.name,
                "args": call.arguments,
                "id": call.id,
                "error": problem,
                "type": "invalid_tool_call",
            }
        )
    return valid, invalid


def usage_to_wire(usage: Any) -> WireDict | None:
    """Our ``metadata["usage"]`` (``prompt_tokens``, ``completion_tokens``,
    ``total_tokens``) as LangChain's ``usage_metadata``."""
    if not isinstance(usage, Mapping):
        return None
    tokens = [usage.get(key) for key in ("prompt_tokens", "completion_tokens", "total_tokens")]
    if not all(isinstance(n, int) for n in tokens):
        return None
    return {"input_tokens": tokens[0], "output_tokens": tokens[1], "total_tokens": tokens[2]}
