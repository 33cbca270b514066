"""Tool calls a stopped run left unanswered, answered before new input reaches the thread.

A run can stop between the model asking for tools and the tools' results being stored: a tool
raised, Ctrl-C, a cancelled task, an abandoned stream, a conflicting writer, a killed process.
The thread then ends with an assistant message whose tool calls have no tool response, and
every OpenAI-compatible server refuses the next request that carries it (HTTP 400). So new
input to such a thread (``invoke``/``call``/``stream`` with messages, or ``update_state``)
is preceded by one tool response per unanswered call saying it was not recorded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..graph.state import Overwrite
from ..messages import AssistantMessage, Message, ToolCall, ToolResponse, ToolResponseMessage
from ._parts import MESSAGES

UNANSWERED_TEXT = (
    "No result: the run stopped (an error, a cancellation or a crash) before this tool call's "
    "result was recorded, so it may not have run. Call it again if it is still needed."
)


def unanswered_calls(messages: Sequence[Message] | None) -> list[ToolCall]:
    """The calls of the conversation's last assistant message that no tool response after it
    answers (only the tail is read: earlier turns were answered when they ended)."""
    if not messages:
        return []
    answered: set[str] = set()
    position = len(messages) - 1
    while position >= 0 and isinstance(messages[position], ToolResponseMessage):
        answered.update(r.id for r in messages[position].responses)  # type: ignore[union-attr]
        position -= 1
    last = messages[position] if position >= 0 else None
    if not isinstance(last, AssistantMessage) or not last.tool_calls:
        return []
    return [call for call in last.tool_calls if call.id not in answered]


def answer_unfinished_calls(
    values: Mapping[str, Any], update: Mapping[str, Any]
) -> Mapping[str, Any]:
    """``update`` with a "no result" tool response for each call the stored conversation
    left unanswered, placed after any tool responses the update brings itself. Unchanged
    when the update adds no message, brings only tool responses (the caller answers the
    calls), or replaces the history (``Overwrite``)."""
    new = update.get(MESSAGES)
    if new is None or isinstance(new, Overwrite):
        return update
    items: list[Any] = list(new) if isinstance(new, (list, tuple)) else [new]
    if not items:
        return update
    missing = unanswered_calls(values.get(MESSAGES))
    if not missing:
        return update
    given = 0
    answered: set[str] = set()
    while given < len(items) and isinstance(items[given], ToolResponseMessage):
        answered.update(r.id for r in items[given].responses)
        given += 1
    if given == len(items):
        return update
    still = [call for call in missing if call.id not in answered]
    if not still:
        return update
    note = ToolResponseMessage(
        responses=tuple(
            ToolResponse(id=c.id, name=c.name, response_data=UNANSWERED_TEXT) for c in still
        ),
        metadata={"unanswered": True},
    )
    return {**update, MESSAGES: [*items[:given], note, *items[given:]]}
