"""Token usage: kept on each model answer, totalled per run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..messages import AssistantMessage, Message, UserMessage
from ..models import Usage

USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


def usage_dict(usage: Usage) -> dict[str, int]:
    """``Usage`` as the plain dict kept in ``AssistantMessage.metadata["usage"]`` (plain, so
    every saver stores it as it is)."""
    return {field: int(getattr(usage, field)) for field in USAGE_FIELDS}


def run_usage(messages: Iterable[Message] | None) -> dict[str, int]:
    """The tokens of the latest run: the sum of the usage of the model answers after the last
    user message (a run resumed after a pause counts as the same run)."""
    total = dict.fromkeys(USAGE_FIELDS, 0)
    for message in reversed(list(messages or ())):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, AssistantMessage):
            counted: Any = message.metadata.get("usage")
            if isinstance(counted, Mapping):
                for field in USAGE_FIELDS:
                    value = counted.get(field)
                    if isinstance(value, int):
                        total[field] += value
    return total
