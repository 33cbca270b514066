"""Context editing: keep the prompt inside a token budget by clearing the oldest tool results
from what the model is sent (the thread's history keeps them)."""

from __future__ import annotations

import dataclasses
import string
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from graph_agent.messages import (
    MESSAGES,
    AssistantMessage,
    Message,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    tool_response,
    tool_response_message,
)
from graph_agent.models import ChatResponse
from graph_agent.tools import ToolContext, tool

from ..interceptors import ModelCallHandler, ModelInterceptor, ModelRequest
from .summarization import TokenCounter, approximate_tokens

__all__ = [
    "CONTEXT_EDITING",
    "DEFAULT_PLACEHOLDER",
    "READ_BACK_PLACEHOLDER",
    "ContextEdit",
    "ContextEditingInterceptor",
    "prompt_tokens",
    "read_cleared_result",
]

CONTEXT_EDITING = "context_editing"
"""The metadata key on a model answer whose prompt was edited: ``{"cleared": n,
"cleared_tokens": t}`` (results cleared, tokens saved by the estimate)."""

DEFAULT_PLACEHOLDER = (
    "[cleared to save context: the result of {name} ({chars} characters); "
    "call the tool again if it is needed]"
)
READ_BACK_PLACEHOLDER = (
    "[cleared to save context: the result of {name} ({chars} characters); "
    'read it back with read_cleared_result(call_id="{id}") if it is needed]'
)
_PLACEHOLDER_FIELDS = ("name", "id", "chars")


@tool
def read_cleared_result(call_id: str, context: ToolContext) -> str:
    """Read back, word for word, a tool result that was cleared from the conversation to save
    context: give the call id its placeholder names."""
    state: Mapping[str, Any] = context.state or {}
    for message in reversed(state.get(MESSAGES) or ()):
        if isinstance(message, ToolResponseMessage):
            for response in message.responses:
                if response.id == call_id:
                    return response.response_data
    return f"No tool result with call id {call_id!r} in this conversation."


Placeholder = str | Callable[[ToolResponse], str]
"""The text a cleared result becomes: a ``str.format`` template with ``{name}`` (the tool),
``{id}`` (the call's id) and ``{chars}`` (the result's length), or a function of the
``ToolResponse``."""


@dataclasses.dataclass(frozen=True)
class ContextEdit:
    """What an edit did: the messages to send, how many tool results it cleared, and how many
    tokens that saved (by the token counter's estimate)."""

    messages: list[Message]
    cleared: int
    cleared_tokens: int


def _reported(message: Message) -> int | None:
    """The tokens of the prompt ``message`` answered plus its own, when the provider reported
    them, plus what an edit of that prompt had cleared (so the count is of the whole history)."""
    if not isinstance(message, AssistantMessage):
        return None
    usage: Any = message.metadata.get("usage")
    if not isinstance(usage, Mapping):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(prompt, int) or prompt <= 0:
        return None
    edited: Any = message.metadata.get(CONTEXT_EDITING)
    saved = edited.get("cleared_tokens") if isinstance(edited, Mapping) else None
    return (
        prompt
        + (completion if isinstance(completion, int) else 0)
        + (saved if isinstance(saved, int) else 0)
    )


def prompt_tokens(
    messages: Sequence[Message], token_counter: TokenCounter = approximate_tokens
) -> tuple[int, bool]:
    """``(tokens, reported)``: the size of ``messages`` unedited. When the latest model answer
    in them carries the provider's usage (``metadata["usage"]``), its prompt and completion
    tokens count everything up to it (the tools' schemas and the system prompt included) and
    ``token_counter`` only the messages after it; otherwise ``token_counter`` counts all."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AssistantMessage):
            reported = _reported(message)
            if reported is None:
                break
            rest = messages[index + 1 :]
            return reported + (token_counter(rest) if rest else 0), True
    return token_counter(messages), False


def _check_count(what: str, value: object, least: int, meaning: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        kind = "a positive int" if least > 0 else "an int >= 0"
        raise ValueError(f"{what} must be {kind} ({meaning}), got {value!r}")
    return value


def _check_placeholder(placeholder: object) -> Placeholder:
    if callable(placeholder):
        return placeholder
    if not isinstance(placeholder, str):
        raise TypeError(
            "placeholder must be a str template or a function of the ToolResponse returning "
            f"a str, got {placeholder!r}"
        )
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(placeholder) if f is not None]
    except ValueError as error:
        raise ValueError(
            f"placeholder {placeholder!r} is not a valid str.format template ({error}); "
            "write a literal brace as {{ or }}"
        ) from None
    unknown = [f for f in fields if f not in _PLACEHOLDER_FIELDS]
    if unknown:
        allowed = ", ".join("{" + f + "}" for f in _PLACEHOLDER_FIELDS)
        raise ValueError(
            f"placeholder {placeholder!r} uses {{{unknown[0]}}}; it may use {allowed} "
            "(write a literal brace as {{ or }})"
        )
    return placeholder


def _check_tools(exclude_tools: object) -> frozenset[str]:
    if isinstance(exclude_tools, str) or not isinstance(exclude_tools, Iterable):
        raise TypeError(
            "exclude_tools must be a list of tool names, e.g. exclude_tools=['read_file'], "
            f"got {exclude_tools!r}"
        )
    names = list(exclude_tools)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(
                f"exclude_tools must hold tool names (str), got {name!r}: "
                "give the tool's name, e.g. exclude_tools=[my_tool.name]"
            )
    return frozenset(names)


class ContextEditingInterceptor(ModelInterceptor):
    """Before each model call, when the prompt is over ``trigger_tokens`` tokens, clears the
    oldest tool results from what the model is sent until it is within ``trigger_tokens`` and
    at least ``clear_at_least`` tokens were saved.

    A cleared result keeps its call and its call's id (so the call and its answer stay a
    pair every provider accepts) and becomes ``placeholder``, a short text that says what was
    there. The last ``keep_last`` tool results and every result of a tool named in
    ``exclude_tools`` are never cleared. With ``clear_tool_inputs`` the cleared calls'
    arguments are sent as ``{}`` too. With ``read_back`` the model is offered the tool
    ``read_cleared_result(call_id)``, which reads a cleared result back from the thread's
    history, and the default placeholder says so.

    Only the request is edited: the thread's state keeps every message word for word, so the
    thread stays complete and resumable. The answer of an edited call records in its metadata
    (``CONTEXT_EDITING``) how many results were cleared and how many tokens that saved.

    Tokens are counted with ``prompt_tokens``: the provider's reported usage on the latest
    answer where there is one, plus ``token_counter`` (default ``approximate_tokens``, about
    four characters per token) for the messages after it; ``token_counter`` alone otherwise.
    The tokens a clearing saves are always ``token_counter``'s estimate.
    """

    def __init__(
        self,
        trigger_tokens: int = 100_000,
        keep_last: int = 3,
        clear_at_least: int = 0,
        exclude_tools: Iterable[str] = (),
        placeholder: Placeholder | None = None,
        *,
        read_back: bool = False,
        clear_tool_inputs: bool = False,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self.trigger_tokens = _check_count(
            "trigger_tokens", trigger_tokens, 1, "the prompt size above which results are cleared"
        )
        self.keep_last = _check_count(
            "keep_last", keep_last, 0, "how many of the latest tool results are never cleared"
        )
        self.clear_at_least = _check_count(
            "clear_at_least", clear_at_least, 0, "the fewest tokens a clearing saves"
        )
        self.exclude_tools = _check_tools(exclude_tools)
        for what, flag in (("read_back", read_back), ("clear_tool_inputs", clear_tool_inputs)):
            if not isinstance(flag, bool):
                raise TypeError(f"{what} must be True or False, got {flag!r}")
        self.read_back = read_back
        if placeholder is None:
            placeholder = READ_BACK_PLACEHOLDER if read_back else DEFAULT_PLACEHOLDER
        self.placeholder = _check_placeholder(placeholder)
        if read_back:
            self.tools = (read_cleared_result,)
        self.clear_tool_inputs = clear_tool_inputs
        if token_counter is not None and not callable(token_counter):
            raise TypeError(
                "token_counter must be a function from a list of messages to an int, "
                f"got {token_counter!r}"
            )
        self.token_counter: TokenCounter = token_counter or approximate_tokens

    def placeholder_for(self, response: ToolResponse) -> str:
        """The text ``response`` is replaced with."""
        if isinstance(self.placeholder, str):
            return self.placeholder.format(
                name=response.name, id=response.id, chars=len(response.response_data)
            )
        text = self.placeholder(response)
        if not isinstance(text, str):
            raise TypeError(
                f"placeholder function returned {text!r} for {response.name}; need a str"
            )
        return text

    def _response_tokens(self, response: ToolResponse) -> int:
        return self.token_counter([tool_response_message((response,))])

    def _call_tokens(self, call: ToolCall) -> int:
        return self.token_counter([AssistantMessage(tool_calls=(call,))])

    def edit(self, messages: Sequence[Message]) -> ContextEdit | None:
        """The messages to send instead of ``messages``, or ``None`` when they fit (or
        nothing may be cleared)."""
        total, _ = prompt_tokens(messages, self.token_counter)
        if total <= self.trigger_tokens:
            return None
        spots = [
            (index, position)
            for index, message in enumerate(messages)
            if isinstance(message, ToolResponseMessage)
            for position in range(len(message.responses))
        ]
        if self.keep_last:
            spots = spots[: -self.keep_last]
        need = max(total - self.trigger_tokens, self.clear_at_least)
        saved = 0
        cleared: dict[int, dict[int, ToolResponse]] = {}
        calls: set[str] = set()
        for index, position in spots:
            if saved >= need:
                break
            response = messages[index].responses[position]  # type: ignore[union-attr]
            if response.name in self.exclude_tools:
                continue
            short = tool_response(response.id, response.name, self.placeholder_for(response))
            gain = self._response_tokens(response) - self._response_tokens(short)
            if gain <= 0:
                continue
            cleared.setdefault(index, {})[position] = short
            calls.add(response.id)
            saved += gain
        if not cleared:
            return None
        edited = list(messages)
        for index, shorts in cleared.items():
            old = messages[index]
            assert isinstance(old, ToolResponseMessage)
            responses = tuple(shorts.get(i, r) for i, r in enumerate(old.responses))
            edited[index] = old.model_copy(update={"responses": responses})
        if self.clear_tool_inputs:
            saved += self._clear_inputs(edited, calls)
        count = sum(len(shorts) for shorts in cleared.values())
        return ContextEdit(edited, count, saved)

    def _clear_inputs(self, messages: list[Message], calls: set[str]) -> int:
        """Sends the arguments of ``calls`` as ``{}``, in place; the tokens that saved."""
        saved = 0
        for index, message in enumerate(messages):
            if not isinstance(message, AssistantMessage) or not any(
                c.id in calls for c in message.tool_calls
            ):
                continue
            changed: list[ToolCall] = []
            for call in message.tool_calls:
                if call.id in calls and call.arguments != "{}":
                    short = call.model_copy(update={"arguments": "{}"})
                    saved += max(self._call_tokens(call) - self._call_tokens(short), 0)
                    call = short
                changed.append(call)
            messages[index] = message.model_copy(update={"tool_calls": tuple(changed)})
        return saved

    def _request(self, request: ModelRequest) -> tuple[ModelRequest, ContextEdit | None]:
        if self.read_back:  # offered on every call: the tool list (a cached prefix) stays put
            offered = request.options.tool_callbacks
            if read_cleared_result not in offered:
                options = request.options.copy(tool_callbacks=(*offered, read_cleared_result))
                request = request.replace(options=options)
        done = self.edit(request.messages)
        return (request, None) if done is None else (request.replace(messages=done.messages), done)

    def intercept_model(self, request: ModelRequest, handler: ModelCallHandler) -> ChatResponse:
        sent, done = self._request(request)
        return _noted(handler(sent), done)

    async def aintercept_model(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ChatResponse]]
    ) -> ChatResponse:
        sent, done = self._request(request)
        return _noted(await handler(sent), done)


def _noted(response: ChatResponse, done: ContextEdit | None) -> ChatResponse:
    """``response`` with what the edit did in its answer's metadata (the next call's count
    adds the cleared tokens back to the reported usage: that is of the edited prompt)."""
    if done is None or not response.results:
        return response
    first = response.results[0]
    note = {"cleared": done.cleared, "cleared_tokens": done.cleared_tokens}
    output = first.output.model_copy(
        update={"metadata": {**first.output.metadata, CONTEXT_EDITING: note}}
    )
    results = (dataclasses.replace(first, output=output), *response.results[1:])
    return dataclasses.replace(response, results=results)
