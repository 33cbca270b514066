"""Conversation helpers shared by the built-in hooks: where a conversation may be cut without
separating a tool call from its response, and how to answer tool calls that will not run."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from graph_agent.graph import OverAllState
from graph_agent.messages import (
    MESSAGES,
    AssistantMessage,
    Message,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)


def messages_of(state: OverAllState) -> list[Message]:
    """The stored conversation (the system prompt is not stored), as a new list."""
    return list(state.get(MESSAGES) or ())


def last_user_index(messages: Sequence[Message]) -> int | None:
    """Index of the latest ``UserMessage``, or ``None``."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], UserMessage):
            return index
    return None


def start_forward(messages: Sequence[Message], start: int) -> int:
    """The first index >= ``start`` where a kept tail may begin: not on a tool response (its
    tool-call message would be cut off), so the pair is dropped whole."""
    while start < len(messages) and isinstance(messages[start], ToolResponseMessage):
        start += 1
    return start


def start_backward(messages: Sequence[Message], start: int) -> int:
    """The last index <= ``start`` where a kept tail may begin: a tail that would start on a
    tool response starts on the assistant message that made the calls instead."""
    while 0 < start < len(messages) and isinstance(messages[start], ToolResponseMessage):
        start -= 1
    return start


def pending_calls(message: Message | None) -> tuple[ToolCall, ...]:
    """The tool calls of ``message`` when it is an assistant message asking for tools."""
    if isinstance(message, AssistantMessage):
        return message.tool_calls
    return ()


def responses_for(
    calls: Sequence[ToolCall], text: Callable[[ToolCall], str]
) -> ToolResponseMessage:
    """One tool response per call, with ``text(call)`` as the result the model sees."""
    return ToolResponseMessage(
        responses=tuple(ToolResponse(id=c.id, name=c.name, response_data=text(c)) for c in calls),
        metadata={"not_run": True},
    )


def answer_missing_calls(messages: Sequence[Message], text: str) -> list[Message] | None:
    """The conversation with a tool response (``text``) inserted after every assistant
    message whose tool calls were never answered, or ``None`` when none is missing."""
    answered = {r.id for m in messages if isinstance(m, ToolResponseMessage) for r in m.responses}
    repaired: list[Message] = []
    changed = False
    for message in messages:
        repaired.append(message)
        missing = [c for c in pending_calls(message) if c.id not in answered]
        if missing:
            repaired.append(responses_for(missing, lambda _call: text))
            changed = True
    return repaired if changed else None


def call_arguments(call: ToolCall) -> Any:
    """The call's arguments as JSON data when they parse, else the raw string."""
    try:
        return json.loads(call.arguments or "{}")
    except ValueError:
        return call.arguments
