"""Messages in the shape of the GenAI conventions' ``gen_ai.input.messages`` /
``gen_ai.output.messages`` (recorded only with ``capture_content=True``)."""

from __future__ import annotations

from typing import Any

from ..messages import AssistantMessage, SystemMessage, ToolResponseMessage, UserMessage

__all__ = ["input_messages", "output_messages"]


def _message(message: Any) -> dict[str, Any]:
    if isinstance(message, ToolResponseMessage):
        return {
            "role": "tool",
            "parts": [
                {"type": "tool_call_response", "id": r.id, "response": r.response_data}
                for r in message.responses
            ],
        }
    parts: list[dict[str, Any]] = []
    if getattr(message, "text", ""):
        parts.append({"type": "text", "content": message.text})
    if isinstance(message, AssistantMessage):
        parts.extend(
            {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments}
            for c in message.tool_calls
        )
        return {"role": "assistant", "parts": parts}
    if isinstance(message, SystemMessage):
        return {"role": "system", "parts": parts}
    if isinstance(message, UserMessage):
        return {"role": "user", "parts": parts}
    return {"role": str(getattr(message, "message_type", "unknown")), "parts": parts}


def input_messages(messages: Any) -> list[dict[str, Any]]:
    """What a model was sent."""
    return [_message(m) for m in messages]


def output_messages(message: Any) -> list[dict[str, Any]]:
    """What a model answered (one choice)."""
    return [_message(message)]
