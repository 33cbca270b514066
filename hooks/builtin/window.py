"""A sliding window over the conversation: the model sees only the latest messages."""

from __future__ import annotations

from collections.abc import Sequence

from graph_agent.graph import OverAllState, Overwrite, RunnableConfig
from graph_agent.messages import MESSAGES, Message

from ..base import HookResult, ModelHook
from ._messages import last_user_index, messages_of, start_forward

__all__ = ["MessageWindowHook", "message_window"]


def message_window(messages: Sequence[Message], max_messages: int) -> list[Message]:
    """The last ``max_messages`` of ``messages``, cut where it is safe.

    A tool response is never kept without the assistant message that made its calls (the pair
    is dropped whole, so the window may hold fewer messages), and the latest ``UserMessage``
    is always kept: when it would fall out, the window is that message followed by the last
    ``max_messages - 1`` messages (again cut where safe).
    """
    if len(messages) <= max_messages:
        return list(messages)
    start = start_forward(messages, len(messages) - max_messages)
    user = last_user_index(messages)
    if user is None or user >= start:
        return list(messages[start:])
    start = start_forward(messages, len(messages) - max_messages + 1)
    return [messages[user], *messages[start:]]


class MessageWindowHook(ModelHook):
    """Before each model call, keeps only the last ``max_messages`` stored messages.

    The older messages are removed from the thread's state (``messages`` is replaced with
    ``Overwrite``), so the thread goes on with the window. The system prompt is not stored and
    not counted. See ``message_window`` for where the cut falls. Leave room for a tool round
    (an assistant message and its tool responses): with ``max_messages`` below 3 the model may
    not see the results of the tools it just called.
    """

    def __init__(self, max_messages: int, *, name: str | None = None) -> None:
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1:
            raise ValueError(f"max_messages must be a positive int, got {max_messages!r}")
        self.max_messages = max_messages
        if name is not None:
            self.name = name

    def before_model(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        messages = messages_of(state)
        kept = message_window(messages, self.max_messages)
        if len(kept) == len(messages):
            return None
        return {MESSAGES: Overwrite(kept)}
