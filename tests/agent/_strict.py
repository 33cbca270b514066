"""What a strict provider checks of a conversation (OpenAI answers 400 otherwise): every tool
call of an assistant message is answered once, by the tool messages right after it, before
any other message; no tool message answers a call that is not pending."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from graph_agent import AssistantMessage, Message, ToolResponseMessage


def unanswered(messages: Sequence[Message]) -> set[str]:
    """The ids of the calls still pending at the end; ``AssertionError`` when a message
    comes before the calls pending ahead of it are answered, or answers no pending call."""
    waiting: set[str] = set()
    for message in messages:
        if isinstance(message, ToolResponseMessage):
            for response in message.responses:
                assert response.id in waiting, (
                    f"a response to {response.id!r}, which is not pending, in {list(messages)!r}"
                )
                waiting.discard(response.id)
            continue
        assert not waiting, f"unanswered tool calls {sorted(waiting)} before {message!r}"
        if isinstance(message, AssistantMessage):
            waiting = {call.id for call in message.tool_calls}
    return waiting


def assert_valid(messages: Sequence[Message]) -> None:
    """A conversation a strict provider accepts as a request: every call answered."""
    pending = unanswered(messages)
    assert not pending, f"the conversation ends with unanswered tool calls {sorted(pending)}"


def assert_prompts_valid(*models: Any) -> int:
    """Every request each model (``ScriptedChatModel``/``FunctionChatModel``) was sent is
    valid; how many there were."""
    prompts: Iterable[Any] = [p for model in models for p in model.prompts]
    count = 0
    for prompt in prompts:
        assert_valid(prompt.messages)
        count += 1
    return count
