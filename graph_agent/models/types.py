"""What goes into a chat model (``Prompt``, options) and what comes out (``ChatResponse``)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from checkpoint.slots import slot_setters

from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)

__all__ = [
    "ChatOptions",
    "ChatResponse",
    "ChatResponseMetadata",
    "Generation",
    "OfferedTool",
    "Prompt",
    "ToolCallingChatOptions",
    "Usage",
]


_BODY_KEYS_OWNED = {
    "messages": "the messages come from the Prompt",
    "stream": "call stream()/astream() for a stream, call()/acall() for one answer",
}


@dataclasses.dataclass(frozen=True, slots=True)
class ChatOptions:
    """Per-call model options; ``None`` means the model's own default (the field is not sent).

    ``max_completion_tokens`` is sent instead of ``max_tokens`` when set (OpenAI's reasoning
    models refuse ``max_tokens``). ``tool_choice`` is ``"auto"``, ``"none"``, ``"required"``
    or the name of one offered tool; it and ``parallel_tool_calls`` are sent only with tools.
    ``extra_body`` is merged into the request body last, so it can set any field a provider
    offers (and replace one this class sets); it cannot set ``messages`` or ``stream``.

    ``response_format`` is sent as OpenAI's ``response_format``, as given:
    ``{"type": "json_schema", "json_schema": {"name": ..., "schema": {...}, "strict": True}}``
    (structured output; a ``ReactAgent`` with ``output_type`` and the ``native`` strategy
    sets it), ``{"type": "json_object"}`` or ``{"type": "text"}``. It is checked where it is
    made: the type, and for ``json_schema`` a ``name`` of at most 64 letters, digits, ``_`` or
    ``-``, a ``schema`` that is a mapping, a ``strict`` that is a bool or None.
    """

    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop: str | tuple[str, ...] | None = None
    max_completion_tokens: int | None = None
    tool_choice: str | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: str | None = None
    seed: int | None = None
    user: str | None = None
    response_format: Mapping[str, Any] | None = None
    extra_body: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        _check_options(self)

    def copy(self, **changes: Any) -> ChatOptions:
        """A copy with the given fields changed."""
        return dataclasses.replace(self, **changes)


def _refuse(field: str, value: Any, expected: str) -> None:
    raise ValueError(f"ChatOptions.{field} must be {expected}; got {value!r}")


def _check_options(options: ChatOptions) -> None:
    """Refuses a badly typed option where it is made, not at the server."""
    for name in ("temperature", "top_p"):
        value = getattr(options, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            _refuse(name, value, "a number or None")
    for name in ("max_tokens", "max_completion_tokens"):
        value = getattr(options, name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            _refuse(name, value, "a positive int or None")
    if options.seed is not None and (
        isinstance(options.seed, bool) or not isinstance(options.seed, int)
    ):
        _refuse("seed", options.seed, "an int or None")
    for name in ("model", "tool_choice", "reasoning_effort", "user"):
        value = getattr(options, name)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            _refuse(name, value, "a non-empty str or None")
    if options.parallel_tool_calls is not None and not isinstance(
        options.parallel_tool_calls, bool
    ):
        _refuse("parallel_tool_calls", options.parallel_tool_calls, "True, False or None")
    stop = options.stop
    if stop is not None and not isinstance(stop, str):
        if not isinstance(stop, Sequence) or not all(isinstance(s, str) for s in stop):
            _refuse("stop", stop, "a str, a sequence of str, or None")
        object.__setattr__(options, "stop", tuple(stop))
    if options.response_format is not None:
        _check_response_format(options.response_format)
    extra = options.extra_body
    if extra is not None:
        if not isinstance(extra, Mapping) or not all(isinstance(k, str) for k in extra):
            _refuse("extra_body", extra, "a mapping of str keys or None")
        for key, why in _BODY_KEYS_OWNED.items():
            if key in extra:
                raise ValueError(f"ChatOptions.extra_body cannot set {key!r}: {why}")


_RESPONSE_FORMAT_TYPES = ("json_schema", "json_object", "text")
_SCHEMA_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _check_response_format(value: Any) -> None:
    """``response_format`` as OpenAI takes it (see ``ChatOptions``)."""
    expected = (
        '{"type": "json_schema", "json_schema": {"name": ..., "schema": {...}}}, '
        '{"type": "json_object"}, {"type": "text"} or None'
    )
    if not isinstance(value, Mapping) or value.get("type") not in _RESPONSE_FORMAT_TYPES:
        _refuse("response_format", value, expected)
    if value["type"] != "json_schema":
        return
    spec = value.get("json_schema")
    if not isinstance(spec, Mapping):
        _refuse("response_format", value, f"{expected} (json_schema is missing)")
    name = spec.get("name")
    if not isinstance(name, str) or not _SCHEMA_NAME.fullmatch(name):
        _refuse(
            "response_format",
            value,
            "a json_schema whose name is 1-64 letters, digits, '_' or '-'",
        )
    if "schema" in spec and not isinstance(spec["schema"], Mapping):
        _refuse("response_format", value, "a json_schema whose schema is a mapping")
    if spec.get("strict") is not None and not isinstance(spec["strict"], bool):
        _refuse("response_format", value, "a json_schema whose strict is True, False or None")


class OfferedTool(Protocol):
    """A tool a call offers the model: what the options carry of a ``tools.ToolCallback``
    (the tools sit above the models, so this names its shape without importing it; every
    ``ToolCallback`` is one, and each is a ``ToolCallback``)."""

    @property
    def tool_definition(self) -> Any: ...  # a ToolDefinition: name, description, input_schema

    @property
    def tool_metadata(self) -> Any: ...  # a ToolMetadata

    def call(self, tool_input: str, tool_context: Any = None) -> str: ...

    async def acall(self, tool_input: str, tool_context: Any = None) -> str: ...


@dataclasses.dataclass(frozen=True, slots=True)
class ToolCallingChatOptions(ChatOptions):
    """Options for a call that may use tools.

    ``tool_callbacks`` are offered to the model; ``tool_names`` are resolved to callbacks by
    a resolver; ``tool_context`` is handed to every tool; with
    ``internal_tool_execution_enabled=False`` the caller, not the framework, runs the tools.
    """

    tool_callbacks: tuple[OfferedTool, ...] = ()
    tool_names: tuple[str, ...] = ()
    tool_context: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    internal_tool_execution_enabled: bool = True


@dataclasses.dataclass(slots=True)
class Prompt:
    """The messages for one model call, and its options. ``Prompt("hi")`` is one user message."""

    messages: list[Message]
    options: ChatOptions | None = None

    def __init__(
        self, messages: str | Message | Iterable[Message], options: ChatOptions | None = None
    ) -> None:
        if type(messages) is list:  # the usual case first
            self.messages = list(messages)
        elif isinstance(messages, str):
            self.messages = [UserMessage(messages)]
        elif isinstance(
            messages, (SystemMessage, UserMessage, AssistantMessage, ToolResponseMessage)
        ):
            self.messages = [messages]
        else:
            self.messages = list(messages)
        self.options = options

    @property
    def tool_options(self) -> ToolCallingChatOptions | None:
        """The options, when they are ``ToolCallingChatOptions``."""
        return self.options if isinstance(self.options, ToolCallingChatOptions) else None


@dataclasses.dataclass(frozen=True, slots=True)
class Usage:
    """Tokens used by a call, as the provider reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class Generation:
    """One answer of the model: the assistant message and why it stopped."""

    output: AssistantMessage
    finish_reason: str | None = None
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class ChatResponseMetadata:
    """About the call: the provider's response id, the model that answered, token usage."""

    id: str | None = None
    model: str | None = None
    usage: Usage | None = None
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class ChatResponse:
    """A model's response (or, when streaming, one chunk of it)."""

    results: tuple[Generation, ...] = ()
    metadata: ChatResponseMetadata = dataclasses.field(default_factory=ChatResponseMetadata)

    @classmethod
    def of(
        cls,
        message: AssistantMessage,
        finish_reason: str | None = None,
        usage: Usage | None = None,
        **metadata: Any,
    ) -> ChatResponse:
        """A response with one generation."""
        if cls is not ChatResponse:  # a subclass may have fields of its own
            return cls(
                results=(Generation(message, finish_reason),),
                metadata=ChatResponseMetadata(usage=usage, **metadata),
            )
        # Made field by field: every model call makes one (see ``slot_setters``).
        generation = _new(Generation)
        set_output, set_finish_reason, set_metadata = _GENERATION_FIELDS
        set_output(generation, message)
        set_finish_reason(generation, finish_reason)
        set_metadata(generation, {})
        if metadata:
            about = ChatResponseMetadata(usage=usage, **metadata)
        else:
            about = _new(ChatResponseMetadata)
            set_id, set_model, set_usage, set_extra = _METADATA_FIELDS
            set_id(about, None)
            set_model(about, None)
            set_usage(about, usage)
            set_extra(about, {})
        response = _new(cls)
        set_results, set_metadata = _RESPONSE_FIELDS
        set_results(response, (generation,))
        set_metadata(response, about)
        return response

    @property
    def result(self) -> Generation:
        """The first generation; ``IndexError`` with a clear message when there is none."""
        if not self.results:
            raise IndexError("this ChatResponse has no generations (an empty stream chunk?)")
        return self.results[0]

    @property
    def text(self) -> str:
        """The first generation's text ('' when there is none)."""
        return self.results[0].output.text if self.results else ""

    def has_tool_calls(self) -> bool:
        return any(g.output.tool_calls for g in self.results)

    @staticmethod
    def merge(chunks: Iterable[ChatResponse]) -> ChatResponse:
        """Fold streamed chunks into one complete response.

        Text is joined; tool-call fragments are merged by ``index`` (or, without one, a new
        non-empty id starts a call and an empty or repeated id continues the last one);
        empty or blank arguments become ``"{}"``. The last finish reason and the last usage
        seen win (a final chunk with no generations may carry only usage).
        """
        texts: list[str] = []
        refusals: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        order: list[int] = []
        last_key: int | None = None
        finish: str | None = None
        usage: Usage | None = None
        response_id = model = None
        metadata: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for chunk in chunks:
            meta = chunk.metadata
            response_id = meta.id or response_id
            model = meta.model or model
            usage = meta.usage or usage
            extra.update(meta.extra)
            for generation in chunk.results[:1]:
                message = generation.output
                if message.text:
                    texts.append(message.text)
                if message.refusal:
                    refusals.append(message.refusal)
                metadata.update(message.metadata)
                finish = generation.finish_reason or finish
                for fragment in message.tool_calls:
                    last_key = _merge_fragment(calls, order, last_key, fragment)
        tool_calls = tuple(_finish_call(calls[key]) for key in order)
        message = AssistantMessage(
            "".join(texts),
            tool_calls=tool_calls,
            metadata=metadata,
            refusal="".join(refusals) or None,
        )
        return ChatResponse(
            results=(Generation(message, finish),),
            metadata=ChatResponseMetadata(id=response_id, model=model, usage=usage, extra=extra),
        )


_new = object.__new__
_GENERATION_FIELDS = slot_setters(Generation)
_METADATA_FIELDS = slot_setters(ChatResponseMetadata)
_RESPONSE_FIELDS = slot_setters(ChatResponse)


def _merge_fragment(
    calls: dict[int, dict[str, Any]], order: list[int], last_key: int | None, fragment: ToolCall
) -> int:
    if fragment.index is not None:
        # The latest call at this index; a fragment with another id is a new call (Ollama
        # gives every parallel call index 0 and its own id).
        key = next((k for k in reversed(order) if calls[k]["index"] == fragment.index), None)
        if key is None:
            key = fragment.index if fragment.index not in calls else -1 - len(order)
        elif fragment.id and calls[key]["id"] and fragment.id != calls[key]["id"]:
            key = -1 - len(order)
    elif last_key is not None and (not fragment.id or fragment.id == calls[last_key]["id"]):
        key = last_key  # an empty or repeated id continues the current call
    else:
        key = -1 - len(order)  # a new call without an index
    call = calls.get(key)
    if call is None:
        call = calls[key] = {"id": "", "name": "", "arguments": [], "type": "function"}
        order.append(key)
    if fragment.id and not call["id"]:
        call["id"] = fragment.id
    if fragment.name and not call["name"]:
        call["name"] = fragment.name
    if fragment.type:
        call["type"] = fragment.type
    call["arguments"].append(fragment.arguments)
    call["index"] = fragment.index
    return key


def _finish_call(call: Mapping[str, Any]) -> ToolCall:
    arguments = "".join(call["arguments"])
    return ToolCall(
        id=call["id"],
        name=call["name"],
        arguments=arguments if arguments.strip() else "{}",
        type=call["type"],
        index=call.get("index"),
    )


def last_assistant(messages: Sequence[Message]) -> AssistantMessage | None:
    """The last assistant message of a conversation, if any."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            return message
    return None
