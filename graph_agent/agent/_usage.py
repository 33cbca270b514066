"""Token usage: kept on each model answer, totalled per run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..messages import AssistantMessage, Message, ToolResponseMessage, UserMessage
from ..models import Usage

USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")
# What an agent run from a tool call (``as_tool``) used, written to the call's extra_state;
# the tool node moves it onto the tool response, so the caller's usage counts it.
SUBAGENT_USAGE = "subagent_usage"


def usage_dict(usage: Usage) -> dict[str, int]:
    """``Usage`` as the plain dict kept in ``AssistantMessage.metadata["usage"]`` (plain, so
    every saver stores it as it is)."""
    return {field: int(getattr(usage, field)) for field in USAGE_FIELDS}


def run_usage(messages: Iterable[Message] | None) -> dict[str, int]:
    """The tokens of the latest run: the sum of the usage of the model answers after the last
    user message (a run resumed after a pause counts as the same run), and of the agents
    called as tools (on their tool responses)."""
    total = dict.fromkeys(USAGE_FIELDS, 0)
    for message in reversed(list(messages or ())):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, (AssistantMessage, ToolResponseMessage)):
            counted: Any = message.metadata.get("usage")
            if isinstance(counted, Mapping):
                for field in USAGE_FIELDS:
                    value = counted.get(field)
                    if isinstance(value, int):
                        total[field] += value
    return total


def add_usage(total: Mapping[str, int], more: Any) -> dict[str, int]:
    """``total`` plus the usage dict ``more`` (ignored unless it is one)."""
    added = dict(total)
    if isinstance(more, Mapping):
        for field in USAGE_FIELDS:
            value = more.get(field)
            if isinstance(value, int):
                added[field] = added.get(field, 0) + value
    return added


def moved_to_response(
    response: ToolResponseMessage, extras: list[dict[str, Any]]
) -> tuple[ToolResponseMessage, list[dict[str, Any]]]:
    """The usage agents called as tools wrote to their calls' extra_state, moved onto the
    batch's tool response (and out of what is merged into the state)."""
    if not any(SUBAGENT_USAGE in extra for extra in extras):
        return response, extras
    total: dict[str, int] = {}
    kept: list[dict[str, Any]] = []
    for extra in extras:
        total = add_usage(total, extra.get(SUBAGENT_USAGE))
        rest = {k: v for k, v in extra.items() if k != SUBAGENT_USAGE}
        if rest:
            kept.append(rest)
    metadata = {**response.metadata, "usage": add_usage(total, response.metadata.get("usage"))}
    return response.model_copy(update={"metadata": metadata}), kept
