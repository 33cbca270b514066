"""The OpenAI chat-completions wire format: request bodies out, responses and chunks in.

Pure functions over plain JSON values (no HTTP here), shared by ``OpenAIChatModel`` and the
stream parser. Parsing is lenient about what a compatible server leaves out (a missing
``usage``, ``null`` content, a tool call without ``index``) and strict about what cannot be
a response at all: those raise ``ModelError``. The readers take values from ``json.loads``,
so a JSON object is checked with ``isinstance(value, dict)``: on the per-chunk path that is
several times cheaper than asking the ``Mapping`` ABC.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ModelError
from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from .types import (
    ChatOptions,
    ChatResponse,
    ChatResponseMetadata,
    Generation,
    Prompt,
    ToolCallingChatOptions,
    Usage,
)

__all__ = [
    "BODY_LIMIT",
    "build_body",
    "chunk_from_event",
    "error_detail",
    "message_to_wire",
    "parse_completion",
    "retry_after",
    "truncate",
]

BODY_LIMIT = 2048
"""How much of a response body a ``ModelError`` keeps."""

Redact = Callable[[str], str]


def _keep(text: str) -> str:
    return text


def truncate(text: str, limit: int = BODY_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


# --- requests ---------------------------------------------------------------------------


def message_to_wire(message: Message) -> list[dict[str, Any]]:
    """The chat-completions messages for one message: one, or one ``tool`` message per
    response of a ``ToolResponseMessage``."""
    if isinstance(message, SystemMessage):
        return [{"role": "system", "content": message.text}]
    if isinstance(message, UserMessage):
        return [{"role": "user", "content": message.text}]
    if isinstance(message, AssistantMessage):
        if not message.tool_calls:
            refusal = {"refusal": message.refusal} if message.refusal else {}
            return [{"role": "assistant", "content": message.text, **refusal}]
        calls = [
            {
                "id": call.id,
                "type": call.type or "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments if call.arguments.strip() else "{}",
                },
            }
            for call in message.tool_calls
        ]
        return [{"role": "assistant", "content": message.text or None, "tool_calls": calls}]
    if isinstance(message, ToolResponseMessage):
        return [
            {"role": "tool", "tool_call_id": response.id, "content": response.response_data}
            for response in message.responses
        ]
    raise TypeError(f"cannot send a {type(message).__name__} to an OpenAI-compatible model")


def _tool_to_wire(callback: Any) -> dict[str, Any]:
    definition = callback.tool_definition
    try:
        parameters = json.loads(definition.input_schema)
    except ValueError as error:
        raise ValueError(
            f"tool {definition.name!r} has an input_schema that is not JSON: {error}"
        ) from error
    return {
        "type": "function",
        "function": {
            "name": definition.name,
            "description": definition.description,
            "parameters": parameters,
        },
    }


def _plain(value: Any) -> Any:
    """``value`` as plain JSON containers (mappings as dicts, sequences as lists), a copy the
    body owns: a caller's mapping proxy or tuple is not JSON, and the body is the caller's
    to change."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _pick(name: str, *sources: ChatOptions | None) -> Any:
    for options in sources:
        value = getattr(options, name, None) if options is not None else None
        if value is not None and value != ():
            return value
    return None


_SCALAR_OPTIONS = ("temperature", "top_p", "seed", "reasoning_effort", "user")
_TOOL_CHOICE_WORDS = ("auto", "none", "required")


def _tool_choice(choice: str, callbacks: Sequence[Any]) -> Any:
    if choice in _TOOL_CHOICE_WORDS:
        return choice
    names = [callback.tool_definition.name for callback in callbacks]
    if choice not in names:
        raise ValueError(
            f"ChatOptions.tool_choice={choice!r} names no offered tool (offered: "
            f"{', '.join(names)}); use 'auto', 'none', 'required' or one of those names"
        )
    return {"type": "function", "function": {"name": choice}}


def build_body(
    prompt: Prompt,
    *,
    model: str,
    default_options: ChatOptions | None = None,
    stream: bool = False,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of a ``POST /chat/completions`` for ``prompt``.

    Each option comes from the prompt's options, else from ``default_options``; unset
    options are left out so the server's defaults apply. ``max_completion_tokens``, when
    set, is sent instead of ``max_tokens``. ``response_format`` is sent as given (structured
    output: OpenAI's ``json_schema`` format), with or without tools. Tools come from
    ``ToolCallingChatOptions.tool_callbacks`` (``tool_names`` are for a resolver, not the
    model); ``tool_choice`` and ``parallel_tool_calls`` are sent only together with tools
    (OpenAI refuses them alone). The model's ``extra_body`` entries are added first, so they
    never replace what this function sets; the options' ``extra_body`` (the defaults', then
    the prompt's) is merged last and may replace anything but ``messages`` and ``stream``.
    """
    sources = (prompt.options, default_options)
    body: dict[str, Any] = dict(extra_body or {})
    body["model"] = _pick("model", *sources) or model
    body["messages"] = [wire for message in prompt.messages for wire in message_to_wire(message)]
    for name in _SCALAR_OPTIONS:
        value = _pick(name, *sources)
        if value is not None:
            body[name] = value
    most = _pick("max_completion_tokens", *sources)
    if most is not None:
        body["max_completion_tokens"] = most
        body.pop("max_tokens", None)
    else:
        most = _pick("max_tokens", *sources)
        if most is not None:
            body["max_tokens"] = most
    stop = _pick("stop", *sources)
    if stop:
        body["stop"] = [stop] if isinstance(stop, str) else list(stop)
    response_format = _pick("response_format", *sources)
    if response_format is not None:
        body["response_format"] = _plain(response_format)
    tool_sources = tuple(o for o in sources if isinstance(o, ToolCallingChatOptions))
    callbacks: Sequence[Any] = _pick("tool_callbacks", *tool_sources) or ()
    if callbacks:
        body["tools"] = [_tool_to_wire(callback) for callback in callbacks]
        choice = _pick("tool_choice", *sources)
        if choice is not None:
            body["tool_choice"] = _tool_choice(choice, callbacks)
        parallel = _pick("parallel_tool_calls", *sources)
        if parallel is not None:
            body["parallel_tool_calls"] = parallel
    for options in reversed(sources):
        if options is not None and options.extra_body:
            body.update(options.extra_body)
    if stream:
        body["stream"] = True
        body["stream_options"] = {**body.get("stream_options", {}), "include_usage": True}
    else:
        body.pop("stream", None)
    return body


# --- responses --------------------------------------------------------------------------


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None

    def count(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    prompt, completion = count("prompt_tokens"), count("completion_tokens")
    return Usage(prompt, completion, count("total_tokens") or prompt + completion)


def _metadata(data: Mapping[str, Any]) -> ChatResponseMetadata:
    raw_usage = data.get("usage")
    extra: dict[str, Any] = {}
    if isinstance(raw_usage, dict):
        extra["usage"] = dict(raw_usage)  # with the provider's *_details, for who wants them
    if isinstance(data.get("system_fingerprint"), str):
        extra["system_fingerprint"] = data["system_fingerprint"]
    return ChatResponseMetadata(
        id=data["id"] if isinstance(data.get("id"), str) else None,
        model=data["model"] if isinstance(data.get("model"), str) else None,
        usage=_usage(raw_usage),
        extra=extra,
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _refusal(message: Mapping[str, Any]) -> str | None:
    refusal = message.get("refusal")
    return refusal if isinstance(refusal, str) and refusal else None


def _arguments(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    if raw is None:
        return ""
    return json.dumps(raw)  # some servers send the arguments as an object


def _tool_call(raw: Any, position: int | None) -> ToolCall | None:
    if not isinstance(raw, dict):
        return None
    function = raw.get("function")
    function = function if isinstance(function, dict) else {}
    index = raw.get("index")
    if not isinstance(index, int) or isinstance(index, bool):
        index = position
    return ToolCall(
        id=raw["id"] if isinstance(raw.get("id"), str) else "",
        name=function["name"] if isinstance(function.get("name"), str) else "",
        arguments=_arguments(function.get("arguments")),
        type=raw["type"] if isinstance(raw.get("type"), str) and raw["type"] else "function",
        index=index,
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _finish_reason(choice: Mapping[str, Any]) -> str | None:
    reason = choice.get("finish_reason")
    return reason if isinstance(reason, str) and reason else None


def error_detail(data: Any) -> str | None:
    """The provider's error message in a decoded error body, or ``None`` when there is none.

    Knows ``{"error": {"message", "type", "code"}}`` (OpenAI, DashScope, llama.cpp, Ollama),
    ``{"error": "..."}``, ``{"object": "error", "message": ...}`` (vLLM) and ``{"detail"}``.
    """
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, str) and error:
        return error
    if isinstance(error, dict):
        message = error.get("message")
        text = message if isinstance(message, str) and message else json.dumps(error)
        code = error.get("code") or error.get("type")
        return f"{text} ({code})" if isinstance(code, (str, int)) and code != "" else text
    if data.get("object") == "error" and isinstance(data.get("message"), str):
        return str(data["message"])
    detail = data.get("detail")
    if isinstance(detail, str) and detail:
        return detail
    return None


def parse_completion(
    data: Any, *, status: int | None = None, body: str = "", redact: Redact = _keep
) -> ChatResponse:
    """A ``chat.completion`` object as a ``ChatResponse``.

    Tool calls keep their raw arguments (blank becomes ``"{}"``) and their position as
    ``index``. An error object, or a body without a usable ``choices[0].message``, raises
    ``ModelError`` carrying ``status`` and the (redacted, truncated) ``body``.
    """
    detail = error_detail(data)
    if detail is not None:
        raise ModelError(
            f"the server answered with an error: {redact(detail)}",
            status=status,
            body=truncate(redact(body)),
        )
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelError(
            "the response has no choices: not a chat completion",
            status=status,
            body=truncate(redact(body)),
        )
    assert isinstance(data, dict)
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ModelError(
            "the response's first choice has no message",
            status=status,
            body=truncate(redact(body)),
        )
    raw_calls = message.get("tool_calls")
    calls = []
    for position, raw in enumerate(_list(raw_calls)):
        call = _tool_call(raw, position)
        if call is not None:
            if not call.arguments.strip():
                call = call.model_copy(update={"arguments": "{}"})
            calls.append(call)
    output = AssistantMessage(
        text=_text(message.get("content")), tool_calls=tuple(calls), refusal=_refusal(message)
    )
    return ChatResponse(
        results=(Generation(output, _finish_reason(choice)),), metadata=_metadata(data)
    )


def chunk_from_event(
    event: Any, *, status: int | None = None, body: str = "", redact: Redact = _keep
) -> ChatResponse:
    """One ``chat.completion.chunk`` as a ``ChatResponse`` chunk.

    The chunk's message holds the text delta and the tool-call fragments as they came
    (``id``/``name``/``arguments`` default to ``""``; ``ChatResponse.merge`` joins them by
    ``index``). A chunk with ``choices: []`` has no generations but keeps its usage. An
    error event raises ``ModelError``.
    """
    if not isinstance(event, dict):
        raise ModelError(
            "stream event is not a JSON object", status=status, body=truncate(redact(body))
        )
    detail = error_detail(event)
    if detail is not None:
        raise ModelError(
            f"the server reported an error in the stream: {redact(detail)}",
            status=status,
            body=truncate(redact(body)),
        )
    choices = event.get("choices")
    results: tuple[Generation, ...] = ()
    choice = _first_choice(choices)
    if choice is not None:
        # a few servers put the whole message where the delta belongs
        delta = _mapping(choice.get("delta")) or _mapping(choice.get("message"))
        raw_calls = delta.get("tool_calls")
        calls = [
            call for call in (_tool_call(raw, None) for raw in _list(raw_calls)) if call is not None
        ]
        message = AssistantMessage(
            text=_text(delta.get("content")), tool_calls=tuple(calls), refusal=_refusal(delta)
        )
        results = (Generation(message, _finish_reason(choice)),)
    return ChatResponse(results=results, metadata=_metadata(event))


def _first_choice(choices: Any) -> Mapping[str, Any] | None:
    """Choice 0 of a chunk (a chunk may carry another choice only, with ``n > 1``)."""
    if not isinstance(choices, list):
        return None
    for choice in choices:
        if isinstance(choice, dict) and choice.get("index", 0) in (0, None):
            return choice
    return None


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait, in seconds, that response headers ask for: ``retry-after-ms`` (OpenAI) or
    ``Retry-After`` as seconds or an HTTP date; ``None`` when absent or unreadable."""
    try:
        return float(headers["retry-after-ms"]) / 1000
    except (KeyError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()
