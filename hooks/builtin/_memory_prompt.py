"""What ``MemoryWriterHook`` asks a chat model: the instructions, the turn's transcript and
the memories already kept, and the JSON shape of its answer (a list of changes), sent as a
``json_schema`` ``response_format`` to a model that takes one and parsed from the text."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from checkpoint import Item
from graph_agent.messages import Message, UserMessage
from graph_agent.models import ChatModel, ChatOptions, Prompt

from .summarization import render_transcript

__all__ = ["CHANGES_SCHEMA", "DEFAULT_MEMORY_INSTRUCTIONS", "memory_prompt", "parsed_changes"]

DEFAULT_MEMORY_INSTRUCTIONS = """\
You keep the long-term memory an assistant has of one user, across conversations. Read the
latest part of a conversation and the memories already kept, and say what to change:
- "add" a memory for each new fact worth knowing in a later conversation: who the user is,
  their details, preferences, decisions, and problems still open. One short sentence that
  stands on its own per memory.
- "update" a memory (its "key") when the conversation changes or corrects it: give the whole
  new sentence as "content".
- "delete" a memory (its "key") that is no longer true.
Keep nothing that is already kept, small talk, or what matters only in this conversation.
Answer with JSON only: {"changes": [{"action": "add", "key": null, "content": "..."}]};
{"changes": []} when nothing should change.

Memories already kept (key: content):
{memories}

The conversation:
{conversation}"""

CHANGES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "changes": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["add", "update", "delete"]},
                    "key": {"type": ["string", "null"]},
                    "content": {"type": ["string", "null"]},
                },
                "required": ["action", "key", "content"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["changes"],
    "additionalProperties": False,
}


def _memory_lines(existing: Sequence[Item]) -> str:
    if not existing:
        return "(none)"
    lines = []
    for item in existing:
        value = item.value
        content = value.get("content", value) if isinstance(value, dict) else value
        lines.append(f"{item.key}: {content}")
    return "\n".join(lines)


def memory_prompt(
    model: ChatModel, instructions: str, messages: Sequence[Message], existing: Sequence[Item]
) -> Prompt:
    """The one-message prompt for ``model``: ``instructions`` with ``{memories}`` and
    ``{conversation}`` filled; a ``response_format`` when the model takes one."""
    text = instructions.replace("{memories}", _memory_lines(existing)).replace(
        "{conversation}", render_transcript(messages)
    )
    native = getattr(model, "supports_native_output", False)
    options = (
        ChatOptions(
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "memory_changes", "schema": CHANGES_SCHEMA, "strict": True},
            }
        )
        if native
        else None
    )
    return Prompt([UserMessage(text)], options)


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def parsed_changes(text: str) -> list[Any]:
    """The changes of a model's answer: ``{"changes": [...]}`` or a bare list, in a code
    fence or not. ``ValueError`` saying what came instead, never quoting it (its errors are
    logged, and log lines never carry message content)."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        data = json.loads(body)
    except ValueError as error:  # the answer is not quoted: it may hold personal data
        raise ValueError(
            f'the memory model did not answer JSON such as {{"changes": [...]}} ({error}, in '
            f"an answer of {len(text)} characters)"
        ) from None
    if isinstance(data, dict) and isinstance(data.get("changes"), list):
        return list(data["changes"])
    if isinstance(data, list):
        return data
    what = (
        f"an object with the keys {sorted(data)}" if isinstance(data, dict) else type(data).__name__
    )
    raise ValueError(
        f'the memory model answered {what}; expected {{"changes": [...]}}, a list of changes'
    )
