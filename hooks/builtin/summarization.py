"""Summarization: when the conversation grows too long, older messages become one summary."""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence

from graph_agent.graph import OverAllState, Overwrite, RunnableConfig
from graph_agent.messages import (
    MESSAGES,
    AssistantMessage,
    Message,
    ToolResponseMessage,
    UserMessage,
)
from graph_agent.models import ChatModel, Prompt

from ..base import HookResult, ModelHook
from ._messages import last_user_index, messages_of, start_backward

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "SUMMARY_PREFIX",
    "SummarizationHook",
    "approximate_tokens",
    "is_summary",
    "render_transcript",
]

TokenCounter = Callable[[Sequence[Message]], int]

SUMMARY_PREFIX = "Summary of the earlier conversation:"

DEFAULT_SUMMARY_PROMPT = """\
Summarize the conversation below for an assistant that will continue it without seeing it.
Keep what matters later: the user's goals and preferences, facts, names, numbers, decisions,
tool results and open questions. Leave out small talk. Answer with the summary only.

{conversation}"""


def _chars(message: Message) -> int:
    """The length of the text the estimate reads in ``message``: its text, then each tool
    call as ``name(arguments)``, then each tool result's name, joined by spaces (empty parts
    left out); counted without building that text."""
    if isinstance(message, ToolResponseMessage):
        responses = message.responses
        total = max(len(responses) - 1, 0)  # the text: the results, one per line
        for response in responses:
            total += len(response.response_data)
        for response in responses:
            if part := len(response.name):
                total = total + part + 1 if total else part
        return total
    total = len(message.text)
    if isinstance(message, AssistantMessage):
        for call in message.tool_calls:  # never empty: name(arguments)
            part = len(call.name) + len(call.arguments) + 2
            total = total + part + 1 if total else part
    return total


class _Counted(weakref.ref):  # type: ignore[type-arg]
    """A weak reference to a counted message, with its count and its key in ``_counted``."""

    __slots__ = ("chars", "key")

    chars: int
    key: int


# Each message's count, by the message object (messages are frozen: an edit is a new object),
# dropped when the message is: a long thread's estimate reads each message once, not on every
# model call. Keyed by ``id`` since messages are not hashable; the weak reference checks that
# an entry is of this very object, and removes it when the object goes.
_counted: dict[int, _Counted] = {}


def _forget(ref: _Counted) -> None:
    if _counted.get(ref.key) is ref:
        del _counted[ref.key]


def _remembered(message: Message) -> int:
    """``_chars(message)``, kept for the next estimate while ``message`` lives."""
    chars = _chars(message)
    try:
        ref = _Counted(message, _forget)
    except TypeError:  # an object that takes no weak reference: counted each time
        return chars
    ref.chars, ref.key = chars, id(message)
    _counted[ref.key] = ref
    return chars


def approximate_tokens(messages: Sequence[Message]) -> int:
    """A rough token count: about 4 characters per token, over the text, tool calls and tool
    results of ``messages`` (the default ``token_counter``; no tokenizer needed). Each
    message's count is kept while the message lives, so a long thread costs little more than
    its new messages on each model call."""
    counted = _counted
    total = 0
    for message in messages:
        ref = counted.get(id(message))
        if ref is not None and ref() is message:
            total += ref.chars
        else:
            total += _remembered(message)
    return math.ceil(total / 4)


def is_summary(message: Message) -> bool:
    """True for a summary message written by ``SummarizationHook``."""
    return isinstance(message, UserMessage) and bool(message.metadata.get("summary"))


def render_transcript(messages: Sequence[Message]) -> str:
    """``messages`` as plain text for the summarizer, one line per message or tool call."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, ToolResponseMessage):
            lines.extend(f"tool {r.name}: {r.response_data}" for r in message.responses)
            continue
        role = "summary" if is_summary(message) else message.message_type
        if message.text:
            lines.append(f"{role}: {message.text}")
        if isinstance(message, AssistantMessage):
            lines.extend(f"assistant called {c.name}({c.arguments})" for c in message.tool_calls)
    return "\n".join(lines)


class SummarizationHook(ModelHook):
    """Before each model call, when the stored conversation has more than ``trigger_messages``
    messages or more than ``trigger_tokens`` tokens (``token_counter``, by default
    ``approximate_tokens``), asks ``model`` to summarize all but the last ``keep_messages``
    and replaces them (``Overwrite``) with one summary message.

    The summary is a ``UserMessage`` whose text starts with ``summary_prefix`` and whose
    metadata has ``{"summary": True}`` (a user message, not a system one, because many chat
    templates accept a system message only first). The kept tail never starts on a tool
    response: it then starts on the assistant message that made the calls, so a little more
    is kept. The latest ``UserMessage`` is always kept word for word, right after the summary.
    A later summarization folds the earlier summary into the new one.

    ``prompt`` is the summarizer's instruction; ``{conversation}`` in it is replaced by the
    transcript (``render_transcript``). The summarizer is called with ``model.call`` (in async
    runs the hook runs in a worker thread), with no tools; its failure propagates.
    """

    def __init__(
        self,
        model: ChatModel,
        trigger_messages: int | None = None,
        trigger_tokens: int | None = None,
        keep_messages: int = 6,
        token_counter: TokenCounter | None = None,
        prompt: str = DEFAULT_SUMMARY_PROMPT,
        *,
        summary_prefix: str = SUMMARY_PREFIX,
        name: str | None = None,
    ) -> None:
        if not isinstance(model, ChatModel):
            raise TypeError(f"model must be a ChatModel, got {model!r}")
        if trigger_messages is None and trigger_tokens is None:
            raise ValueError("SummarizationHook needs trigger_messages, trigger_tokens or both")
        for what, value in (
            ("trigger_messages", trigger_messages),
            ("trigger_tokens", trigger_tokens),
        ):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{what} must be a positive int or None, got {value!r}")
        if (
            isinstance(keep_messages, bool)
            or not isinstance(keep_messages, int)
            or keep_messages < 0
        ):
            raise ValueError(f"keep_messages must be a non-negative int, got {keep_messages!r}")
        if trigger_messages is not None and keep_messages >= trigger_messages:
            raise ValueError(
                f"keep_messages ({keep_messages}) must be below trigger_messages "
                f"({trigger_messages}), or every model call would summarize again"
            )
        if "{conversation}" not in prompt:
            raise ValueError("prompt must contain '{conversation}', where the transcript goes")
        self.model = model
        self.trigger_messages = trigger_messages
        self.trigger_tokens = trigger_tokens
        self.keep_messages = keep_messages
        self.token_counter: TokenCounter = token_counter or approximate_tokens
        self.prompt = prompt
        self.summary_prefix = summary_prefix
        if name is not None:
            self.name = name

    def triggered(self, messages: Sequence[Message]) -> bool:
        """Whether ``messages`` is over a trigger."""
        if self.trigger_messages is not None and len(messages) > self.trigger_messages:
            return True
        return (
            self.trigger_tokens is not None and self.token_counter(messages) > self.trigger_tokens
        )

    def split(self, messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
        """``(to summarize, to keep)``; nothing to summarize gives ``([], messages)``."""
        cut = start_backward(messages, len(messages) - self.keep_messages)
        if cut <= 0:
            return [], list(messages)
        user = last_user_index(messages)
        if user is not None and user < cut:
            older = [*messages[:user], *messages[user + 1 : cut]]
            kept = [messages[user], *messages[cut:]]
        else:
            older, kept = list(messages[:cut]), list(messages[cut:])
        if all(is_summary(m) for m in older):
            return [], list(messages)
        return older, kept

    def summarize(self, messages: Sequence[Message]) -> str:
        """The summarizer model's summary of ``messages``."""
        instruction = self.prompt.replace("{conversation}", render_transcript(messages))
        response = self.model.call(Prompt([UserMessage(instruction)]))
        return response.text.strip()

    def summary_message(self, summary: str) -> UserMessage:
        return UserMessage(f"{self.summary_prefix}\n{summary}", metadata={"summary": True})

    def before_model(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        messages = messages_of(state)
        if not self.triggered(messages):
            return None
        older, kept = self.split(messages)
        if not older:
            return None
        summary = self.summary_message(self.summarize(older))
        return {MESSAGES: Overwrite([summary, *kept])}
