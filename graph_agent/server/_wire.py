"""The Agent Protocol's JSON, as LangGraph's Agent Server speaks it: pure conversions.

Everything here turns our objects into the dicts the ``langgraph-sdk`` clients expect (or what
they send into ours), with no web framework and no I/O: messages (LangChain's message dicts),
thread states, interrupts, threads, runs, assistants, a graph's drawing, run configs, and the
payloads of each stream mode built from our run events (``RunStreamEncoder``), down to the bytes
of one server-sent event. ``protocol29.md`` (issue 29) is the contract these follow.

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
an id of their own (``stream_message_id``), and the answer then appears in ``values`` under its
derived id. Giving the agent's answers an id when they are made (``metadata["id"]``) would make
the two equal; see protocol29.md.
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
from typing import Any, Final, TypeGuard

from pydantic import BaseModel

from ..errors import GraphAgentError
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
from ..graph import Command, Interrupt, RunnableConfig, Send, StateSnapshot
from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

__all__ = [
    "HEARTBEAT",
    "NAMESPACE_GRAPH",
    "STREAM_MODES",
    "Chunk",
    "RunStreamEncoder",
    "assistant_id_for",
    "assistant_to_wire",
    "checkpoint_to_wire",
    "command_from_wire",
    "empty_state_to_wire",
    "error_to_wire",
    "event_name",
    "graph_to_wire",
    "input_from_wire",
    "interrupt_to_wire",
    "interrupts_to_wire",
    "message_to_wire",
    "messages_from_wire",
    "messages_to_wire",
    "parse_stream_modes",
    "run_config_from_wire",
    "run_event_to_wire",
    "run_to_wire",
    "sse_event",
    "state_to_wire",
    "stream_message_id",
    "thread_interrupts",
    "thread_status",
    "thread_to_wire",
    "to_jsonable",
    "values_to_wire",
]

WireDict = dict[str, Any]
Chunk = tuple[str, Any]
"""One stream part: the SSE ``event:`` name and its ``data`` (JSON-able)."""

# LangGraph's namespace for the default assistant of a graph: its id is uuid5(this, graph_id),
# so a graph gets the same assistant id here as on LangGraph's server.
NAMESPACE_GRAPH: Final = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
# Ours, for derived message, task and stream-message ids.
_NAMESPACE_WIRE: Final = uuid.UUID("0b3f9c52-29a1-5e7c-9d2e-6a1f0c4e8b29")

# Metadata keys ``message_to_wire`` maps to fields of their own (not ``response_metadata``).
_ID, _IDS, _NAME, _USAGE = "id", "ids", "name", "usage"
_OWN_KEYS: Final = frozenset({_ID, _IDS, _NAME, _USAGE})

INTERRUPT_KEY: Final = "__interrupt__"
HEARTBEAT: Final = b": heartbeat\r\n\r\n"
"""An SSE comment line the server sends every few seconds to keep the connection open."""


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
        if value and all(isinstance(item, _MESSAGE_TYPES) for item in value):
            return messages_to_wire(value, thread_id=thread_id)
        return [to_jsonable(item, thread_id=thread_id) for item in value]
    if isinstance(value, _MESSAGE_TYPES):
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


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# -- messages: ours -> LangChain's dicts ----------------------------------------------------

_MESSAGE_TYPES: Final = (UserMessage, AssistantMessage, SystemMessage, ToolResponseMessage)


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


def _derived_id(thread_id: str, occurrence: int, fingerprint: str) -> str:
    return str(uuid.uuid5(_NAMESPACE_WIRE, f"{thread_id}\x1f{occurrence}\x1f{fingerprint}"))


def _fingerprint(wire: Mapping[str, Any]) -> str:
    return json.dumps(
        {k: v for k, v in wire.items() if k != "id"},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )


def _given_id(metadata: Mapping[str, Any]) -> str | None:
    given = metadata.get(_ID)
    return given if isinstance(given, str) and given else None


def _rest(metadata: Mapping[str, Any]) -> WireDict:
    """The metadata that goes to ``response_metadata`` (the keys with fields of their own
    left out)."""
    return {str(k): to_jsonable(v) for k, v in metadata.items() if k not in _OWN_KEYS}


def _name(metadata: Mapping[str, Any]) -> str | None:
    name = metadata.get(_NAME)
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
        wire["usage_metadata"] = _usage_to_wire(metadata.get(_USAGE))
    else:  # pragma: no cover - Message is a closed union
        raise TypeError(f"not a message: {message!r}")
    return [(wire, _given_id(metadata))]


def _tool_dicts(message: ToolResponseMessage) -> list[tuple[WireDict, str | None]]:
    ids = message.metadata.get(_IDS)
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


def _usage_to_wire(usage: Any) -> WireDict | None:
    """Our ``metadata["usage"]`` (``prompt_tokens``, ``completion_tokens``,
    ``total_tokens``) as LangChain's ``usage_metadata``."""
    if not isinstance(usage, Mapping):
        return None
    tokens = [usage.get(key) for key in ("prompt_tokens", "completion_tokens", "total_tokens")]
    if not all(isinstance(n, int) for n in tokens):
        return None
    return {"input_tokens": tokens[0], "output_tokens": tokens[1], "total_tokens": tokens[2]}


def _usage_from_wire(usage: Any) -> dict[str, int] | None:
    if not isinstance(usage, Mapping):
        return None
    tokens = [usage.get(key) for key in ("input_tokens", "output_tokens", "total_tokens")]
    counts = [n for n in tokens if isinstance(n, int)]
    if len(counts) != 3:
        return None
    return {"prompt_tokens": counts[0], "completion_tokens": counts[1], "total_tokens": counts[2]}


# -- messages: what clients send -> ours ----------------------------------------------------

_ACCEPTED: Final = (
    "accepted: a string (a user message), a [role, content] pair, or a dict with 'role' "
    "(user, assistant, system, developer, tool) or 'type' (human, ai, system, tool) and "
    "'content' (a string or a list of text blocks); a tool message needs 'tool_call_id'"
)
_KINDS: Final = {
    "human": "human",
    "user": "human",
    "ai": "ai",
    "assistant": "ai",
    "aimessagechunk": "ai",
    "ai_chunk": "ai",
    "system": "system",
    "developer": "system",
    "tool": "tool",
}


def messages_from_wire(items: Any) -> list[Message]:
    """What a client sends as messages, as ours. Accepts LangChain's forms: a string, a
    ``[role, content]`` pair, or a dict with ``role`` (``user``/``assistant``/``system``/
    ``developer``/``tool``, OpenAI's) or ``type`` (``human``/``ai``/``system``/``tool``,
    LangChain's; ``role`` wins when both are there, as in LangChain), ``content`` a string or
    a list of text blocks. An assistant message's ``tool_calls`` may be LangChain's
    (``{name, args, id}``) or OpenAI's (``{id, function: {name, arguments}}``). Consecutive
    tool messages become one ``ToolResponseMessage``. A given ``id`` (and ``name``) is kept
    in ``metadata``, ``usage_metadata`` as ``metadata["usage"]``, ``response_metadata`` as
    the rest of ``metadata``.

    Raises ``ValueError`` naming the bad item and what is accepted."""
    if isinstance(items, (str, Mapping)):
        items = [items]
    if not isinstance(items, (list, tuple)):
        raise ValueError(
            f"messages must be a list, got {type(items).__name__} {_shown(items)}; {_ACCEPTED}"
        )
    out: list[Message] = []
    tools: list[tuple[ToolResponse, Mapping[str, Any]]] = []
    for index, item in enumerate(items):
        kind, fields = _parsed(index, item)
        if kind == "tool":
            tools.append((_tool_response(index, item, fields), fields))
            continue
        if tools:
            out.append(_tool_message(tools))
            tools = []
        out.append(_message(index, item, kind, fields))
    if tools:
        out.append(_tool_message(tools))
    return out


def _shown(item: Any) -> str:
    text = repr(item)
    return text if len(text) <= 200 else text[:197] + "..."


def _bad(index: int, item: Any, problem: str) -> ValueError:
    return ValueError(f"messages[{index}] {_shown(item)}: {problem}; {_ACCEPTED}")


def _parsed(index: int, item: Any) -> tuple[str, Mapping[str, Any]]:
    """The message kind (human, ai, system, tool) and the fields of ``item``."""
    if isinstance(item, str):
        return "human", {"content": item}
    if isinstance(item, (list, tuple)):
        if len(item) != 2 or not isinstance(item[0], str):
            raise _bad(index, item, "a list item must be a [role, content] pair")
        role, content = item
        fields: Mapping[str, Any] = {"role": role, "content": content}
        item = fields
    if not isinstance(item, Mapping):
        raise _bad(index, item, f"a message cannot be a {type(item).__name__}")
    given = item.get("role", item.get("type"))
    if not isinstance(given, str):
        raise _bad(index, item, "it has no 'role' or 'type'")
    kind = _KINDS.get(given.lower())
    if kind is None:
        raise _bad(index, item, f"unknown message role/type {given!r}")
    return kind, item


def _text(index: int, item: Any, content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                text = block.get("text")
                if not isinstance(text, str):
                    raise _bad(index, item, "a text block needs a string 'text'")
                parts.append(text)
            else:
                kind = block.get("type") if isinstance(block, Mapping) else type(block).__name__
                raise _bad(
                    index, item, f"content block of type {kind!r} is not supported (text only)"
                )
        return "".join(parts)
    raise _bad(index, item, f"'content' must be a string or a list, not {type(content).__name__}")


def _metadata(index: int, item: Any, fields: Mapping[str, Any]) -> dict[str, Any]:
    extra = fields.get("response_metadata")
    metadata: dict[str, Any] = dict(extra) if isinstance(extra, Mapping) else {}
    for key in _OWN_KEYS:
        metadata.pop(key, None)
    given = fields.get("id")
    if given is not None:
        if not isinstance(given, str):
            raise _bad(index, item, "'id' must be a string")
        if given:
            metadata[_ID] = given
    name = fields.get("name")
    if isinstance(name, str) and name:
        metadata[_NAME] = name
    return metadata


def _message(index: int, item: Any, kind: str, fields: Mapping[str, Any]) -> Message:
    text = _text(index, item, fields.get("content"))
    metadata = _metadata(index, item, fields)
    if kind == "human":
        return UserMessage(text, metadata=metadata)
    if kind == "system":
        return SystemMessage(text, metadata=metadata)
    usage = _usage_from_wire(fields.get("usage_metadata"))
    if usage is not None:
        metadata[_USAGE] = usage
    extra = fields.get("additional_kwargs")
    refusal = extra.get("refusal") if isinstance(extra, Mapping) else None
    calls = [
        _tool_call(index, item, call)
        for key in ("tool_calls", "invalid_tool_calls")
        for call in _listed(index, item, fields.get(key), key)
    ]
    return AssistantMessage(
        text,
        tool_calls=tuple(calls),
        refusal=refusal if isinstance(refusal, str) else None,
        metadata=metadata,
    )


def _listed(index: int, item: Any, value: Any, key: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise _bad(index, item, f"'{key}' must be a list")
    return value


def _tool_call(index: int, item: Any, call: Any) -> ToolCall:
    if not isinstance(call, Mapping):
        raise _bad(index, item, "a tool call must be a dict")
    function = call.get("function")
    if isinstance(function, Mapping):  # OpenAI's form
        name, args = function.get("name"), function.get("arguments")
    else:
        name, args = call.get("name"), call.get("args", call.get("arguments"))
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise _bad(index, item, f"tool call {_shown(call)} has no string 'id'")
    if not isinstance(name, str) or not name:
        raise _bad(index, item, f"tool call {call_id!r} has no string 'name'")
    if args is None:
        arguments = "{}"
    elif isinstance(args, str):
        arguments = args
    elif isinstance(args, Mapping):
        arguments = json.dumps(args, ensure_ascii=False)
    else:
        raise _bad(index, item, f"tool call {call_id!r}: 'args' must be a dict or a JSON string")
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _tool_response(index: int, item: Any, fields: Mapping[str, Any]) -> ToolResponse:
    call_id = fields.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise _bad(index, item, "a tool message needs a string 'tool_call_id'")
    name = fields.get("name")
    text = _text(index, item, fields.get("content"))
    return ToolResponse(id=call_id, name=name if isinstance(name, str) else "", response_data=text)


def _tool_message(tools: list[tuple[ToolResponse, Mapping[str, Any]]]) -> ToolResponseMessage:
    metadata: dict[str, Any] = {}
    for _, fields in reversed(tools):  # the first response's metadata wins
        extra = fields.get("response_metadata")
        if isinstance(extra, Mapping):
            metadata.update({k: v for k, v in extra.items() if k not in _OWN_KEYS})
    ids = [fields.get("id") for _, fields in tools]
    if any(isinstance(i, str) and i for i in ids):
        metadata[_IDS] = [i if isinstance(i, str) and i else None for i in ids]
    return ToolResponseMessage(responses=tuple(r for r, _ in tools), metadata=metadata)


# -- run input, command and config ------------------------------------------------------------


def input_from_wire(value: Any, *, message_keys: Iterable[str] = ("messages",)) -> Any:
    """A run's ``input`` (or a state update's ``values``) as ours: the values under
    ``message_keys`` go through ``messages_from_wire``; ``None`` stays ``None`` (resume).
    A list of updates (LangGraph's ``[[key, value], ...]`` form) is not a dict: refused."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(
            f"input must be a JSON object of state keys (or null to resume), got "
            f"{type(value).__name__} {_shown(value)}"
        )
    keys = set(message_keys)
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in keys and item is not None:
            try:
                out[key] = messages_from_wire(item)
            except ValueError as error:
                raise ValueError(f"input[{key!r}]: {error}") from None
        else:
            out[key] = item
    return out


def command_from_wire(
    command: Mapping[str, Any], *, message_keys: Iterable[str] = ("messages",)
) -> Command:
    """A run's ``command`` (``{resume, update, goto}``) as our ``Command``. ``update`` may be
    a dict or LangGraph's list of ``[key, value]`` pairs (later pairs win for a key); ``goto``
    a node name, a ``{node, input}`` send, or a list of them. A client sends no ``resume`` key
    for ``resume=None`` (the SDK drops ``None`` fields): that is no resume here either."""
    if not isinstance(command, Mapping):
        raise ValueError(f"command must be a JSON object, got {type(command).__name__}")
    unknown = set(command) - {"resume", "update", "goto"}
    if unknown:
        raise ValueError(
            f"command has unknown field(s) {sorted(unknown)}; known: resume, update, goto"
        )
    update = command.get("update")
    if isinstance(update, (list, tuple)):
        pairs: dict[str, Any] = {}
        for pair in update:
            if not (
                isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], str)
            ):
                raise ValueError(f"command.update pairs must be [key, value], got {_shown(pair)}")
            pairs[pair[0]] = pair[1]
        update = pairs
    if update is not None:
        update = input_from_wire(update, message_keys=message_keys)
    goto = command.get("goto")
    targets: list[str | Send] | None = None
    if goto is not None:
        targets = [_goto(g) for g in (goto if isinstance(goto, (list, tuple)) else [goto])]
    if "resume" in command and command["resume"] is not None:
        return Command(resume=command["resume"], update=update, goto=targets)
    return Command(update=update, goto=targets)


def _goto(target: Any) -> str | Send:
    if isinstance(target, str):
        return target
    if isinstance(target, Mapping) and isinstance(target.get("node"), str):
        arg = target.get("input")
        return Send(target["node"], arg if isinstance(arg, Mapping) else {})
    raise ValueError(f"command.goto takes node names or {{node, input}}, got {_shown(target)}")


def run_config_from_wire(thread_id: str, body: Mapping[str, Any]) -> RunnableConfig:
    """The ``RunnableConfig`` of a run (or a state read/update) from its request body: the
    thread from the path; the checkpoint from ``checkpoint.checkpoint_id``, ``checkpoint_id``
    or ``config.configurable.checkpoint_id``; ``config.recursion_limit``; and the caller's
    context (``context``, or ``config.configurable`` less the ids LangGraph keeps there) as
    ``metadata``. Both ``context`` and ``configurable`` keys: refused, as LangGraph does."""
    config = body.get("config") or {}
    if not isinstance(config, Mapping):
        raise ValueError(f"config must be a JSON object, got {type(config).__name__}")
    configurable = dict(config.get("configurable") or {})
    context = body.get("context") or {}
    if not isinstance(context, Mapping):
        raise ValueError(f"context must be a JSON object, got {type(context).__name__}")
    checkpoint = body.get("checkpoint") or {}
    checkpoint_id = (
        (checkpoint.get("checkpoint_id") if isinstance(checkpoint, Mapping) else None)
        or body.get("checkpoint_id")
        or configurable.get("checkpoint_id")
    )
    ns = (checkpoint.get("checkpoint_ns") if isinstance(checkpoint, Mapping) else None) or (
        configurable.get("checkpoint_ns")
    )
    if ns:
        raise ValueError(f"checkpoint_ns {ns!r}: runs and updates address the root graph only")
    for key in ("thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map"):
        configurable.pop(key, None)
    if configurable and context:
        raise ValueError(
            "Cannot specify both configurable and context. Prefer setting context alone."
        )
    limit = config.get("recursion_limit")
    return RunnableConfig(
        thread_id=thread_id,
        checkpoint_id=checkpoint_id if isinstance(checkpoint_id, str) and checkpoint_id else None,
        metadata=dict(context or configurable),
        recursion_limit=limit if isinstance(limit, int) and limit > 0 else None,
    )


# -- values, interrupts, thread state -------------------------------------------------------


def values_to_wire(
    values: Mapping[str, Any],
    *,
    thread_id: str = "",
    interrupts: Iterable[Interrupt] = (),
) -> WireDict:
    """A state's values as JSON (messages as LangChain dicts); with interrupts waiting for
    an answer, ``"__interrupt__": [{value, id}, ...]`` too, as LangGraph's last ``values``
    of a paused run and ``runs.wait`` carry them."""
    wire = {str(k): to_jsonable(v, thread_id=thread_id) for k, v in values.items()}
    waiting = interrupts_to_wire(interrupts, thread_id=thread_id)
    if waiting:
        wire[INTERRUPT_KEY] = waiting
    return wire


def interrupt_to_wire(interrupt: Interrupt, *, thread_id: str = "") -> WireDict:
    """``{"value": ..., "id": ...}``: the SDK's ``Interrupt`` (LangGraph dropped ``ns``,
    ``when`` and ``resumable`` from it; ``response_schema`` we have none of)."""
    return {"value": to_jsonable(interrupt.value, thread_id=thread_id), "id": interrupt.id}


def interrupts_to_wire(interrupts: Iterable[Interrupt], *, thread_id: str = "") -> list[WireDict]:
    """The interrupts waiting for an answer (``interrupt()`` calls). An ``interrupt_before``
    / ``interrupt_after`` pause is not one on LangGraph's wire (the thread is ``interrupted``
    with ``next`` set, and a run with ``input: null`` goes on): it is left out."""
    return [interrupt_to_wire(i, thread_id=thread_id) for i in interrupts if i.when == "during"]


def checkpoint_to_wire(
    thread_id: str, checkpoint_id: str | None, namespace: Sequence[str] = ()
) -> WireDict:
    """The SDK's ``Checkpoint``: ``{thread_id, checkpoint_ns, checkpoint_id, checkpoint_map}``
    (``checkpoint_ns`` is ``""`` for the root graph, ``"node:task|node:task"`` below)."""
    return {
        "thread_id": thread_id,
        "checkpoint_ns": "|".join(namespace),
        "checkpoint_id": checkpoint_id,
        "checkpoint_map": None,
    }


def _root_thread(snapshot: StateSnapshot) -> str:
    """The client's thread id of ``snapshot`` (a subgraph's checkpoints live in a saver
    thread named ``"<thread>|<node>:<task>..."``)."""
    suffix = "|" + "|".join(snapshot.namespace)
    if snapshot.namespace and snapshot.thread_id.endswith(suffix):
        return snapshot.thread_id[: -len(suffix)]
    return snapshot.thread_id


def _task_id(thread_id: str, checkpoint_id: str, name: str, index: int) -> str:
    return str(
        uuid.uuid5(_NAMESPACE_WIRE, f"task\x1f{thread_id}\x1f{checkpoint_id}\x1f{name}\x1f{index}")
    )


def _tasks_to_wire(snapshot: StateSnapshot, thread_id: str) -> list[WireDict]:
    """One task per node in ``next``: its interrupts, and for a node that runs a paused
    subgraph the subgraph's checkpoint (and its state, when the snapshot has it)."""
    ns = tuple(snapshot.namespace)
    depth = len(ns)
    # the root-level task of each interrupt: the node (and the task id, for a subgraph's)
    owners: list[tuple[str, str | None, Interrupt]] = []
    for interrupt in snapshot.interrupts:
        inner = (
            tuple(interrupt.namespace)[depth:] if tuple(interrupt.namespace)[:depth] == ns else ()
        )
        if inner:
            node, _, task = inner[0].partition(":")
            owners.append((node, task or None, interrupt))
        else:
            owners.append((interrupt.node, None, interrupt))
    children = {tuple(child.namespace)[depth : depth + 1]: child for child in snapshot.subgraphs}
    tasks: list[WireDict] = []
    claimed: set[int] = set()
    for index, name in enumerate(snapshot.next):
        mine = [k for k, (node, _, _) in enumerate(owners) if node == name and k not in claimed]
        claimed.update(mine)
        task_id = next((owners[k][1] for k in mine if owners[k][1]), None)
        sub: tuple[str, ...] = (f"{name}:{task_id}",) if task_id else ()
        child = children.get(sub) if sub else None
        tasks.append(
            {
                "id": task_id or _task_id(thread_id, snapshot.checkpoint_id, name, index),
                "name": name,
                "path": ["__pregel_pull", name],
                "error": None,
                "interrupts": interrupts_to_wire((owners[k][2] for k in mine), thread_id=thread_id),
                "checkpoint": checkpoint_to_wire(thread_id, None, (*ns, *sub)) if sub else None,
                "state": state_to_wire(child, thread_id=thread_id) if child is not None else None,
                "result": None,
            }
        )
    return tasks


def state_to_wire(
    snapshot: StateSnapshot,
    *,
    thread_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> WireDict:
    """A snapshot as the SDK's ``ThreadState``: ``values`` (messages as LangChain dicts),
    ``next``, ``tasks`` (one per next node, with its interrupts; a paused subgraph's state
    when the snapshot was read with ``subgraphs=True``), ``checkpoint``,
    ``parent_checkpoint``, ``metadata`` (ours: ``source``, ``nodes``, plus ``step`` and the
    given ``metadata``), ``created_at`` (ISO 8601), ``interrupts``; and LangGraph's deprecated
    ``checkpoint_id`` / ``parent_checkpoint_id``. ``thread_id``: the client's thread id
    (default: the snapshot's, less a subgraph's suffix)."""
    thread = thread_id if thread_id is not None else _root_thread(snapshot)
    ns = tuple(snapshot.namespace)
    return {
        "values": values_to_wire(snapshot.values, thread_id=thread),
        "next": list(snapshot.next),
        "tasks": _tasks_to_wire(snapshot, thread),
        "checkpoint": checkpoint_to_wire(thread, snapshot.checkpoint_id, ns),
        "parent_checkpoint": (
            checkpoint_to_wire(thread, snapshot.parent_id, ns) if snapshot.parent_id else None
        ),
        "metadata": {
            **to_jsonable(dict(snapshot.metadata), thread_id=thread),
            "step": snapshot.step,
            **to_jsonable(dict(metadata or {}), thread_id=thread),
        },
        "created_at": snapshot.created_at.isoformat(),
        "interrupts": interrupts_to_wire(snapshot.interrupts, thread_id=thread),
        "checkpoint_id": snapshot.checkpoint_id,
        "parent_checkpoint_id": snapshot.parent_id,
    }


def empty_state_to_wire() -> WireDict:
    """The ``ThreadState`` of a thread with no checkpoint yet (what LangGraph answers:
    ``checkpoint`` is ``null``, which is how ``useStream`` tells an empty thread)."""
    return {
        "values": {},
        "next": [],
        "tasks": [],
        "checkpoint": None,
        "parent_checkpoint": None,
        "metadata": None,
        "created_at": None,
        "interrupts": [],
        "checkpoint_id": None,
        "parent_checkpoint_id": None,
    }


def thread_interrupts(state: Mapping[str, Any]) -> dict[str, list[WireDict]]:
    """A ``Thread``'s ``interrupts``: ``{task_id: [interrupt, ...]}`` from a wire
    ``ThreadState`` (``state_to_wire``'s), for the tasks that have some."""
    return {t["id"]: list(t["interrupts"]) for t in state.get("tasks") or () if t["interrupts"]}


def thread_status(
    snapshot: StateSnapshot | None, *, busy: bool = False, failed: bool = False
) -> str:
    """A thread's ``status`` as LangGraph spells it: ``"busy"`` while a run is pending or
    running on it, ``"error"`` when its last run failed, ``"interrupted"`` when its state has
    nodes to run (a pause, ``interrupt_before``/``after``, or a run that stopped between
    steps), ``"idle"`` otherwise."""
    if busy:
        return "busy"
    if failed:
        return "error"
    if snapshot is not None and snapshot.next:
        return "interrupted"
    return "idle"


# -- threads, runs, assistants, graphs --------------------------------------------------------


def _iso(moment: datetime) -> str:
    return moment.isoformat()


def thread_to_wire(
    thread_id: str,
    *,
    created_at: datetime,
    updated_at: datetime,
    metadata: Mapping[str, Any],
    status: str,
    values: Mapping[str, Any] | None = None,
    interrupts: Mapping[str, list[WireDict]] | None = None,
    state_updated_at: datetime | None = None,
    config: Mapping[str, Any] | None = None,
) -> WireDict:
    """The SDK's ``Thread``. ``values`` is the wire values of its latest state (``None``
    before its first checkpoint), ``interrupts`` ``thread_interrupts(state)``."""
    return {
        "thread_id": thread_id,
        "created_at": _iso(created_at),
        "updated_at": _iso(updated_at),
        "state_updated_at": _iso(state_updated_at or updated_at),
        "metadata": to_jsonable(dict(metadata)),
        "status": status,
        "config": to_jsonable(dict(config or {})),
        "values": dict(values) if values is not None else None,
        "interrupts": dict(interrupts or {}),
    }


def run_to_wire(
    run_id: str,
    *,
    thread_id: str,
    assistant_id: str,
    created_at: datetime,
    updated_at: datetime,
    status: str,
    metadata: Mapping[str, Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    multitask_strategy: str = "enqueue",
) -> WireDict:
    """The SDK's ``Run``. ``status``: ``pending``, ``running``, ``success`` (also when the
    run ended paused on an interrupt: the thread is then ``interrupted``), ``error``,
    ``timeout`` or ``interrupted`` (cancelled)."""
    return {
        "run_id": run_id,
        "thread_id": thread_id,
        "assistant_id": assistant_id,
        "created_at": _iso(created_at),
        "updated_at": _iso(updated_at),
        "status": status,
        "metadata": to_jsonable(dict(metadata or {})),
        "kwargs": to_jsonable(dict(kwargs or {})),
        "multitask_strategy": multitask_strategy,
    }


def assistant_id_for(graph_id: str) -> str:
    """The id of a graph's default assistant, the one LangGraph's server gives it."""
    return str(uuid.uuid5(NAMESPACE_GRAPH, graph_id))


def assistant_to_wire(
    graph_id: str,
    *,
    created_at: datetime,
    name: str | None = None,
    description: str | None = None,
    config: Mapping[str, Any] | None = None,
    context: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    version: int = 1,
) -> WireDict:
    """The SDK's ``Assistant`` for a served graph's default assistant (LangGraph makes one per
    graph: ``metadata`` ``{"created_by": "system"}``, ``version`` 1)."""
    return {
        "assistant_id": assistant_id_for(graph_id),
        "graph_id": graph_id,
        "config": to_jsonable(dict(config or {})),
        "context": to_jsonable(dict(context or {})),
        "created_at": _iso(created_at),
        "updated_at": _iso(created_at),
        "metadata": to_jsonable(
            dict(metadata if metadata is not None else {"created_by": "system"})
        ),
        "version": version,
        "name": name if name is not None else graph_id,
        "description": description,
    }


def graph_to_wire(graph: Any) -> WireDict:
    """``CompiledGraph.get_graph()`` (a networkx ``DiGraph``) as ``assistants.get_graph``
    answers it, LangChain's ``Graph.to_json()``: ``{"nodes": [{id, type, data}], "edges":
    [{source, target, conditional?, data?}]}``; ``__end__`` has only an ``id``."""
    nodes: list[WireDict] = []
    for node in graph.nodes:
        name = str(node)
        nodes.append(
            {"id": name}
            if name == "__end__"
            else {"id": name, "type": "runnable", "data": {"name": name}}
        )
    edges: list[WireDict] = []
    for source, target, attrs in graph.edges(data=True):
        edge: WireDict = {"source": str(source), "target": str(target)}
        if attrs.get("label") is not None:
            edge["data"] = str(attrs["label"])
        if attrs.get("conditional"):
            edge["conditional"] = True
        edges.append(edge)
    return {"nodes": nodes, "edges": edges}


# -- errors, SSE ----------------------------------------------------------------------------

# The errors whose message a client sees, as LangGraph's server shows those of the builtins
# and of its DSL; any other is "An internal error occurred" (a message may hold secrets).
_REVEALED: Final = (
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    RuntimeError,
    RecursionError,
    TimeoutError,
    GraphAgentError,
)


def error_to_wire(
    error: BaseException, *, reveal: Callable[[BaseException], bool] | None = None
) -> WireDict:
    """``{"error": <class name>, "message": ...}``: the ``error`` SSE event's data and a
    ``runs.wait`` body's ``__error__``. The message is hidden ("An internal error occurred")
    unless ``reveal(error)`` (default: the builtins LangGraph shows, and our own errors)."""
    shown = reveal(error) if reveal is not None else isinstance(error, _REVEALED)
    message = str(error) if shown else "An internal error occurred"
    return {"error": type(error).__name__, "message": message}


def _sse_field(value: str) -> bytes:
    return value.replace("\r", "").replace("\n", "").encode()


def sse_event(event: str, data: Any, id: str | None = None) -> bytes:
    """One server-sent event as LangGraph's server writes it: ``event: <name>``, ``data:
    <JSON on one line>``, ``id: <id>`` (only when given), each ended by CRLF, then a blank
    line. ``data`` must be JSON-able (``to_jsonable``)."""
    parts = [b"event: ", _sse_field(event), b"\r\ndata: ", _json_text(data).encode(), b"\r\n"]
    if id is not None:
        parts += [b"id: ", _sse_field(id), b"\r\n"]
    parts.append(b"\r\n")
    return b"".join(parts)


# -- stream modes and their payloads ------------------------------------------------------------

STREAM_MODES: Final = frozenset(
    {"values", "updates", "messages", "messages-tuple", "custom", "tasks", "checkpoints",
     "debug", "run_events"}
)  # fmt: skip
"""The modes we serve: LangGraph's, less ``events`` (LangChain's callback events) and the
v2-only ``tools``/``lifecycle``, plus ``run_events``: our own ``RunEvent``s as JSON."""


def parse_stream_modes(value: Any, *, default: Sequence[str] = ("values",)) -> list[str]:
    """``stream_mode`` as clients send it -- a string, a list, a JSON array in a query
    parameter (the JS client's form), repeated query parameters (the Python client's), or
    nothing (``default``) -- as a list of modes, each once. Raises ``ValueError`` for a mode
    we do not serve, saying why."""
    if value is None or value == "" or value == []:
        return list(default)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError:
                raise ValueError(f"stream_mode {value!r} is not a JSON array") from None
        else:
            value = [text]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"stream_mode must be a string or a list, got {type(value).__name__}")
    modes: list[str] = []
    for mode in value:
        if mode in ("", None):
            continue
        if mode == "events":
            raise ValueError(
                "stream_mode 'events' (LangChain's callback events) is not served; "
                "'run_events' streams graph-agent's own run events"
            )
        if mode in ("tools", "lifecycle"):
            raise ValueError(
                f"stream_mode entries [{mode!r}] are only supported on the v2 event "
                "streaming endpoints"
            )
        if not isinstance(mode, str) or mode not in STREAM_MODES:
            raise ValueError(
                f"unknown stream_mode {mode!r}; served: {', '.join(sorted(STREAM_MODES))}"
            )
        if mode not in modes:
            modes.append(mode)
    return modes or list(default)


def event_name(mode: str, namespace: Sequence[str] = (), *, subgraphs: bool = False) -> str:
    """The SSE event name of a mode's part: ``mode``, or ``mode|node:task|...`` for a
    subgraph's part when the run streams subgraphs."""
    return "|".join((mode, *namespace)) if subgraphs and namespace else mode


def stream_message_id(run_id: str, namespace: Sequence[str], task_id: str | None, call: int) -> str:
    """The id of the chunks of one streamed model answer: the ``call``-th model call of the
    task (LangChain's ids of a run look the same: ``lc_run--<uuid>``)."""
    key = f"{run_id}\x1f{'|'.join(namespace)}\x1f{task_id}\x1f{call}"
    return f"lc_run--{uuid.uuid5(_NAMESPACE_WIRE, key)}"


def run_event_to_wire(event: RunEvent, *, thread_id: str = "") -> WireDict:
    """One of our ``RunEvent``s as JSON (the ``run_events`` mode): every field of the event,
    ``namespace`` as a list, messages as LangChain dicts, errors as ``error_to_wire``,
    interrupts as ``{value, id, node, when, namespace}`` (this is our format, so it keeps
    what LangGraph's ``Interrupt`` dropped)."""
    wire: WireDict = {}
    for field in dataclasses.fields(event):  # type: ignore[arg-type]  # slotted dataclasses
        value = getattr(event, field.name)
        if field.name == "namespace":
            wire["namespace"] = list(value)
        elif isinstance(value, BaseException):
            wire[field.name] = error_to_wire(value)
        elif isinstance(value, Interrupt):
            wire[field.name] = _our_interrupt(value, thread_id)
        elif field.name == "interrupts":
            wire[field.name] = [_our_interrupt(i, thread_id) for i in value]
        elif field.name == "messages":
            wire[field.name] = messages_to_wire(value, thread_id=thread_id)
        else:
            wire[field.name] = to_jsonable(value, thread_id=thread_id)
    return wire


def _our_interrupt(interrupt: Interrupt, thread_id: str) -> WireDict:
    return {
        **interrupt_to_wire(interrupt, thread_id=thread_id),
        "node": interrupt.node,
        "when": interrupt.when,
        "namespace": list(interrupt.namespace),
    }


def _messages_in(value: Any) -> TypeGuard[Sequence[Message]]:
    return (
        isinstance(value, (list, tuple))
        and bool(value)
        and all(isinstance(m, _MESSAGE_TYPES) for m in value)
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

    @property
    def needs_snapshots(self) -> bool:
        """Whether ``checkpoint()`` must be called after each ``CheckpointEvent``: for the
        modes that show the state, and for those that show messages (an appended message's
        id counts the messages already in the state)."""
        return bool(
            self.modes & {"values", "updates", "messages", "messages-tuple", "checkpoints", "debug"}
        )

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
        return [("values", values_to_wire(snapshot.values, thread_id=self.thread_id))]

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
                    values_to_wire(snapshot.values, thread_id=self.thread_id),
                )
            )
        if snapshot.interrupts and source in ("input", "loop", "interrupt"):
            if "updates" in self.modes:
                pause = {INTERRUPT_KEY: interrupts_to_wire(waiting, thread_id=self.thread_id)}
                parts.append((self._name("updates", ns), pause))
            if "values" in self.modes and waiting:
                wire = values_to_wire(snapshot.values, thread_id=self.thread_id, interrupts=waiting)
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
            for t in _tasks_to_wire(snapshot, self.thread_id)
        ]
        return {
            "config": self._config(snapshot.checkpoint_id, ns),
            "parent_config": self._config(snapshot.parent_id, ns),
            "values": values_to_wire(snapshot.values, thread_id=self.thread_id),
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
            "error": None if error is None else f"{type(error).__name__}({error})",
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
                wire[str(key)] = messages_to_wire(
                    value,
                    thread_id=self.thread_id,
                    before=before if _messages_in(before) else (),
                )
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
        usage = _usage_to_wire(_usage_dict(event.usage))
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
