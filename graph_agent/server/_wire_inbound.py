"""The Agent Protocol's messages as clients send them (run input, ``command.update``, state
edits), read back into ours: LangChain's forms and OpenAI's, with a clear error for anything
else. Their ids, names, usage and metadata are kept where ``_wire_messages`` finds them again
when it writes the messages out."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from ._wire_messages import META_ID, META_IDS, META_NAME, META_USAGE, OWN_META_KEYS

__all__ = ["messages_from_wire", "short_repr"]


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
            f"messages must be a list, got {type(items).__name__} {short_repr(items)}; {_ACCEPTED}"
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


def short_repr(item: Any) -> str:
    text = repr(item)
    return text if len(text) <= 200 else text[:197] + "..."


def _bad(index: int, item: Any, problem: str) -> ValueError:
    return ValueError(f"messages[{index}] {short_repr(item)}: {problem}; {_ACCEPTED}")


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
    for key in OWN_META_KEYS:
        metadata.pop(key, None)
    given = fields.get("id")
    if given is not None:
        if not isinstance(given, str):
            raise _bad(index, item, "'id' must be a string")
        if given:
            metadata[META_ID] = given
    name = fields.get("name")
    if isinstance(name, str) and name:
        metadata[META_NAME] = name
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
        metadata[META_USAGE] = usage
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
        raise _bad(index, item, f"tool call {short_repr(call)} has no string 'id'")
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
            metadata.update({k: v for k, v in extra.items() if k not in OWN_META_KEYS})
    ids = [fields.get("id") for _, fields in tools]
    if any(isinstance(i, str) and i for i in ids):
        metadata[META_IDS] = [i if isinstance(i, str) and i else None for i in ids]
    return ToolResponseMessage(responses=tuple(r for r, _ in tools), metadata=metadata)
