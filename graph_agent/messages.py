"""Chat messages: system, user, assistant (with tool calls) and tool responses.

Messages are frozen pydantic models, registered with the checkpoint serializer so that they
can live in a graph's state and be checkpointed by any saver. ``MESSAGES``, ``JUMP_TO`` and
``REJECTED`` name the state keys an agent and its hooks share.

Messages hold text. A file or a JSON value that came with one (from a user over AG-UI or
A2A, from a remote A2A agent) travels beside its text, in the same shape wherever it came
from: ``metadata[FILES]`` and ``metadata[DATA]``, each named in the text by a line of its own
(``file_line``) for the model to read.
"""

from __future__ import annotations

import binascii
from base64 import b64decode
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from checkpoint import register_type

__all__ = [
    "DATA",
    "FILES",
    "JUMP_TO",
    "MESSAGES",
    "REJECTED",
    "AssistantMessage",
    "Message",
    "MessageType",
    "SystemMessage",
    "ToolCall",
    "ToolResponse",
    "ToolResponseMessage",
    "UserMessage",
    "file_line",
]

# The state keys an agent (graph_agent.agent) and its hooks (hooks) share, named once here, at
# the lowest layer both build on; the agent's own bookkeeping keys are in agent/_keys.py.
MESSAGES = "messages"
"""The state key of the conversation: a list of messages, appended to."""
JUMP_TO = "jump_to"
"""The state key by which a hook sends the run elsewhere: ``{JUMP_TO: JumpTo.END}``."""
REJECTED = "rejected_tool_calls"
"""The state key of tool calls a person rejected (call id -> the text the model gets
instead of the tool's result): the agent answers them without running the tool."""

FILES = "files"
"""The metadata key of a message's files: a list of ``{"name", "media_type", "url"}`` or
``{"name", "media_type", "bytes"}`` (the bytes as base64 text, so a thread's state stays
JSON), each named in the message's text by its ``file_line``."""
DATA = "data"
"""The metadata key of the JSON values that came with a message (A2A's data parts)."""


def file_line(entry: Mapping[str, Any], index: int) -> str:
    """The line that names ``entry``, the ``index``-th of a message's ``metadata[FILES]``,
    in its text: ``[file report.pdf (application/pdf, 1200 bytes): metadata["files"][0]]``,
    or ``[file photo.png (image/png): https://...]`` for a file given by its URL."""
    name = entry.get("name") or "(unnamed)"
    media = entry.get("media_type") or "unknown type"
    if "url" in entry:
        return f"[file {name} ({media}): {entry['url']}]"
    data = entry.get("bytes", b"")
    if isinstance(data, str):
        try:
            size = len(b64decode(data, validate=True))
        except (binascii.Error, ValueError):
            size = len(data)
    else:
        size = len(data)
    return f'[file {name} ({media}, {size} bytes): metadata["{FILES}"][{index}]]'


MessageType = Literal["system", "user", "assistant", "tool"]
_M = TypeVar("_M", bound=BaseModel)


# One shared set per distinct set of given field names. Every pydantic model carries the set
# of the fields its creator gave (``model_fields_set``), and a set is an object the garbage
# collector tracks: sharing it saves one object per message, and a long conversation, or
# thousands at once, holds many messages. Frozen models never change that set (``model_copy``
# copies it before it adds to it), so sharing cannot leak a change between messages.
_FIELD_SETS: dict[frozenset[str], set[str]] = {}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def model_post_init(self, context: Any, /) -> None:
        given = self.__pydantic_fields_set__
        key = frozenset(given)
        shared = _FIELD_SETS.get(key)
        if shared is None:
            shared = _FIELD_SETS.setdefault(key, given)
        object.__setattr__(self, "__pydantic_fields_set__", shared)


@register_type(name="graph_agent.ToolCall")
class ToolCall(_Frozen):
    """A tool the model asks to run: ``arguments`` is the raw JSON string it produced.

    ``index`` is the call's position in a streamed response (set on stream fragments; a
    complete call may keep it); it is how fragments of one call are merged.
    """

    id: str
    name: str
    arguments: str = "{}"
    type: str = "function"
    index: int | None = None


@register_type(name="graph_agent.ToolResponse")
class ToolResponse(_Frozen):
    """The result of one tool call, for the model: ``id`` is the call's id."""

    id: str
    name: str
    response_data: str


class _TextMessage(_Frozen):
    text: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    def __init__(self, text: str | None = None, /, **data: Any) -> None:
        if text is not None:
            if "text" in data:
                raise TypeError("give the text once: positionally or as text=")
            data["text"] = text
        super().__init__(**data)

    def __repr__(self) -> str:
        extra = "".join(
            f", {name}={value!r}"
            for name, value in self.__dict__.items()
            if name not in ("text", "message_type") and value not in ({}, [], None)
        )
        return f"{type(self).__name__}({self.text!r}{extra})"


@register_type(name="graph_agent.SystemMessage")
class SystemMessage(_TextMessage):
    """Instructions for the model."""

    message_type: Literal["system"] = "system"

    if TYPE_CHECKING:  # the text is positional; tell type checkers what the base accepts

        def __init__(self, text: str | None = None, /, **data: Any) -> None: ...


@register_type(name="graph_agent.UserMessage")
class UserMessage(_TextMessage):
    """What the user said."""

    message_type: Literal["user"] = "user"

    if TYPE_CHECKING:  # the text is positional; tell type checkers what the base accepts

        def __init__(self, text: str | None = None, /, **data: Any) -> None: ...


@register_type(name="graph_agent.AssistantMessage")
class AssistantMessage(_TextMessage):
    """What the model said, and the tools it asks to run. ``refusal`` is the model's reason
    when it declined to answer (OpenAI's ``message.refusal``); ``text`` is then usually empty.
    ``answer`` is what to show a reader: the text, else the refusal."""

    message_type: Literal["assistant"] = "assistant"
    tool_calls: tuple[ToolCall, ...] = ()
    refusal: str | None = None

    if TYPE_CHECKING:  # the text is positional; tell type checkers what the base accepts

        def __init__(self, text: str | None = None, /, **data: Any) -> None: ...

    def has_tool_calls(self) -> bool:
        return bool(self.tool_calls)

    @property
    def answer(self) -> str:
        """The text, or, when the model refused and wrote none, the refusal."""
        return self.text or self.refusal or ""


@register_type(name="graph_agent.ToolResponseMessage")
class ToolResponseMessage(_Frozen):
    """The results of the tool calls of one assistant message, one response per call."""

    message_type: Literal["tool"] = "tool"
    responses: tuple[ToolResponse, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def text(self) -> str:
        """The responses' data, one per line (what a reader of the conversation sees)."""
        return "\n".join(r.response_data for r in self.responses)


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolResponseMessage


# -- the framework's own tool responses ----------------------------------------------------------
# A tool call's response and the message holding a call batch's responses are made by the
# framework from values of the right types already (a validated call's id and name, a tool's
# text). When the types say so, they are made without pydantic's validation (which would
# check nothing more, at several times the cost): the same fields, in the same order, and the
# shared set of given field names, as validating them would make.

# The slots every model has (BaseModel's), set through their descriptors: one C call each.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def _shared(given: set[str]) -> set[str]:
    return _FIELD_SETS.setdefault(frozenset(given), given)


_RESPONSE_GIVEN = _shared({"id", "name", "response_data"})
_RESPONSES_GIVEN = _shared({"responses"})


def _made(cls: type[_M], values: dict[str, Any], given: set[str]) -> _M:
    message = cls.__new__(cls)
    _set_dict(message, values)
    _set_fields_set(message, given)
    _set_extra(message, None)
    _set_private(message, None)
    return message


def tool_response(call_id: str, name: str, text: str) -> ToolResponse:
    """``ToolResponse(id=call_id, name=name, response_data=text)``, unvalidated when all three
    are ``str`` (a non-str goes through validation, and fails there as it would)."""
    if type(call_id) is str and type(name) is str and type(text) is str:
        values = {"id": call_id, "name": name, "response_data": text}
        return _made(ToolResponse, values, _RESPONSE_GIVEN)
    return ToolResponse(id=call_id, name=name, response_data=text)


def tool_response_message(responses: tuple[ToolResponse, ...]) -> ToolResponseMessage:
    """``ToolResponseMessage(responses=responses)``, unvalidated when each response is a
    ``ToolResponse`` (validated when it was made)."""
    for response in responses:
        if type(response) is not ToolResponse:
            return ToolResponseMessage(responses=responses)
    values = {"message_type": "tool", "responses": responses, "metadata": {}}
    return _made(ToolResponseMessage, values, _RESPONSES_GIVEN)
