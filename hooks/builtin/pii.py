"""``PIIHook``: finds personal data (emails, card numbers, IP addresses, phone numbers, URLs,
or what your own detector finds) in the user's input, the model's answer and tool results,
and blocks, redacts, masks or hashes it before it is stored, streamed or sent on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any, Literal

from graph_agent.graph import OverAllState, Overwrite, RunnableConfig, interrupt
from graph_agent.messages import MESSAGES, AssistantMessage, ToolCall, UserMessage
from graph_agent.models import ChatModel, ChatResponse, Prompt
from graph_agent.tools.manager import ToolCallRequest

from ..base import AgentHook, HookResult, JumpTo
from ..interceptors import ModelInterceptor, ModelRequest, ToolInterceptor
from ._messages import messages_of
from ._pii_detect import (
    STRATEGIES,
    Detector,
    PIIDetectionError,
    PIIMatch,
    PIIStrategy,
    StreamGuard,
    apply_strategy,
    in_json,
    resolve_detector,
)

__all__ = ["PIIDetectionError", "PIIHook", "PIIMatch"]

Direction = Literal["input", "output", "tool_results"]


class PIIHook(AgentHook, ModelInterceptor, ToolInterceptor):
    """Finds one kind of personal data and blocks, redacts, masks or hashes it, in the
    directions asked for. Pass it both as a hook and as an interceptor::

        pii = PIIHook("email", strategy="redact", apply_to_output=True)
        ReactAgent(..., hooks=[pii], interceptors=[pii])

    ``pii_type``: ``"email"``, ``"credit_card"`` (Luhn-checked), ``"ip"`` (IPv4 and IPv6),
    ``"phone"``, ``"url"``, or a name of your own with ``detector`` (a regex, text or
    compiled, or a function from a text to its matches: ``PIIMatch`` or ``(start, end)``).

    ``strategy``: ``"redact"`` (``[REDACTED_EMAIL]``), ``"mask"`` (``****-****-****-1111``,
    ``a***@example.com``), ``"hash"`` (``<email_hash:1f2e3d4c>``, stable: one value, one
    hash) or ``"block"`` (``PIIDetectionError``; with ``on_block="interrupt"`` the user's
    input pauses the run for a person instead: resume with ``True`` to let it through, or
    anything else to end the run with a refusal).

    Directions: ``apply_to_input`` (default) rewrites the user's messages of a run's new
    input before the run announces or stores it (and any that reached the state another
    way when the run starts); ``apply_to_output`` the model's answer text as it
    comes out of the model, before any event, checkpoint or stream carries it (a streamed
    answer is held back where a match could still be growing, so half a card number never
    goes out); ``apply_to_tool_results`` each tool's text before the model and the checkpoint
    see it. Listed first among the interceptors, it also checks an answer an inner one gives
    without the model (``ModelFallbackInterceptor``'s). ``stream_hold`` holds back that many more characters of a streamed answer, for a
    detector whose matches may span spaces (the built-in ones need none).
    """

    def __init__(
        self,
        pii_type: str,
        strategy: PIIStrategy = "redact",
        *,
        detector: Detector | None = None,
        apply_to_input: bool = True,
        apply_to_output: bool = False,
        apply_to_tool_results: bool = False,
        on_block: Literal["raise", "interrupt"] = "raise",
        stream_hold: int = 0,
        name: str | None = None,
    ) -> None:
        if not isinstance(pii_type, str) or not pii_type:
            raise ValueError(f"PIIHook: pii_type must be a non-empty name, got {pii_type!r}")
        if strategy not in STRATEGIES:
            raise ValueError(
                f"PIIHook '{pii_type}': strategy must be one of {', '.join(STRATEGIES)}, "
                f"got {strategy!r}"
            )
        if on_block not in ("raise", "interrupt"):
            raise ValueError(
                f"PIIHook '{pii_type}': on_block must be 'raise' or 'interrupt', got {on_block!r}"
            )
        if on_block == "interrupt" and (
            strategy != "block" or apply_to_output or apply_to_tool_results
        ):
            raise ValueError(
                f"PIIHook '{pii_type}': on_block='interrupt' pauses a run on the user's input "
                "only: use it with strategy='block' and apply_to_input alone (the model's "
                "answer and tool results are checked mid-call, where a run cannot pause)"
            )
        if not (apply_to_input or apply_to_output or apply_to_tool_results):
            raise ValueError(
                f"PIIHook '{pii_type}': applies nowhere; set apply_to_input, apply_to_output "
                "or apply_to_tool_results"
            )
        if not isinstance(stream_hold, int) or stream_hold < 0:
            raise ValueError(f"PIIHook '{pii_type}': stream_hold must be an int >= 0")
        self.pii_type = pii_type
        self.strategy = strategy
        self.find = resolve_detector(pii_type, detector)
        self.apply_to_input = apply_to_input
        self.apply_to_output = apply_to_output
        self.apply_to_tool_results = apply_to_tool_results
        self.on_block = on_block
        self.can_jump_to = (JumpTo.END,) if on_block == "interrupt" else ()  # the refusal
        self.stream_hold = stream_hold
        self.name = name or f"PII[{pii_type}]"

    def __repr__(self) -> str:
        return f"PIIHook({self.pii_type!r}, strategy={self.strategy!r}, name={self.name!r})"

    def detect(self, text: str) -> list[PIIMatch]:
        """The matches of this hook's kind in ``text``, in order."""
        return self.find(text)

    def apply(self, text: str, direction: Direction = "input") -> str:
        """``text`` under this hook's strategy (``PIIDetectionError`` when it blocks)."""
        return apply_strategy(text, self.find(text), self.pii_type, self.strategy, direction)

    # -- input: the user's messages, when a run starts -------------------------------------

    def clean_input(self, inputs: Mapping[str, Any]) -> Mapping[str, Any]:
        """A run's new input with the user's messages checked: the agent calls it before the
        input is announced (``run_start``) or stored (the thread's input checkpoint)."""
        if not self.apply_to_input or self.on_block == "interrupt":
            return inputs  # a person decides on what the state holds
        given = inputs.get(MESSAGES)
        replace = isinstance(given, Overwrite)
        items = given.value if isinstance(given, Overwrite) else given
        if items is None:
            return inputs
        listed = list(items) if isinstance(items, (list, tuple)) else [items]
        cleaned, changed = self._cleaned(listed)
        if not changed:
            return inputs
        return {**inputs, MESSAGES: Overwrite(cleaned) if replace else cleaned}

    def before_agent(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        if not self.apply_to_input:
            return None
        messages = messages_of(state)
        if self.on_block == "interrupt":
            return self._ask(messages)
        cleaned, changed = self._cleaned(messages)  # input that came another way (update_state)
        return {MESSAGES: Overwrite(cleaned)} if changed else None

    def _cleaned(self, messages: list[Any]) -> tuple[list[Any], bool]:
        changed = False
        for index, message in enumerate(messages):
            if isinstance(message, UserMessage) and message.text:
                text = self.apply(message.text, "input")
                if text != message.text:
                    messages[index] = message.model_copy(update={"text": text})
                    changed = True
        return messages, changed

    def _ask(self, messages: list[Any]) -> HookResult:
        last = messages[-1] if messages else None
        if not isinstance(last, UserMessage):
            return None
        count = len(self.find(last.text))
        if not count:
            return None
        decision = interrupt(
            {
                "type": "pii_detected",
                "pii_type": self.pii_type,
                "direction": "input",
                "count": count,
            }
        )
        if decision is True:
            return None
        refusal = AssistantMessage(
            f"I can't take this message: it holds {self.pii_type.replace('_', ' ')} data."
        )
        return {MESSAGES: [refusal], "jump_to": JumpTo.END}

    # -- output: the model's answer, before events and checkpoints see it ------------------

    def wrap_model(self, model: ChatModel) -> ChatModel:
        """``model`` with its answers checked (the agent calls this for each interceptor
        that has it, so what the model answers is checked before it is announced)."""
        return _GuardedModel(model, self) if self.apply_to_output else model

    def intercept_model(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ChatResponse]
    ) -> ChatResponse:
        return self._answer(handler(request))

    async def aintercept_model(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ChatResponse]]
    ) -> ChatResponse:
        return self._answer(await handler(request))

    def _answer(self, response: ChatResponse) -> ChatResponse:
        """The answer as the agent stores it, checked again: an interceptor inside this one
        may have answered without the model (a fallback model's answer). Already checked
        text comes out unchanged."""
        return self.checked_answer(response) if self.apply_to_output else response

    def checked_answer(self, response: ChatResponse) -> ChatResponse:
        """``response`` with its answer checked: the text, the refusal and the arguments of
        each tool call (inside their JSON: the result is JSON still)."""
        if not response.results:
            return response
        message = response.results[0].output
        checked = self._checked_message(message)
        return response if checked is message else _with_output(response, checked)

    def _checked_message(self, message: AssistantMessage) -> AssistantMessage:
        update: dict[str, Any] = {}
        for field in ("text", "refusal"):
            value = getattr(message, field)
            if value and (out := self.apply(value, "output")) != value:
                update[field] = out
        calls = tuple(self._checked_call(c) for c in message.tool_calls)
        if any(new is not old for new, old in zip(calls, message.tool_calls)):
            update["tool_calls"] = calls
        return message.model_copy(update=update) if update else message

    def _checked_call(self, call: ToolCall) -> ToolCall:
        arguments = in_json(call.arguments, lambda text: self.apply(text, "output"))
        return (
            call
            if arguments == call.arguments
            else call.model_copy(update={"arguments": arguments})
        )

    # -- tool results -----------------------------------------------------------------------

    def intercept_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], str]
    ) -> str:
        result = handler(request)
        return self.apply(result, "tool_results") if self.apply_to_tool_results else result

    async def aintercept_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[str]]
    ) -> str:
        result = await handler(request)
        return self.apply(result, "tool_results") if self.apply_to_tool_results else result


def _with_output(response: ChatResponse, message: AssistantMessage) -> ChatResponse:
    first = response.results[0]
    generation = type(first)(message, first.finish_reason, first.metadata)
    return type(response)(results=(generation, *response.results[1:]), metadata=response.metadata)


class _StreamCheck:
    """One streamed answer, checked as it goes: its text and refusal each through a
    ``StreamGuard``; its tool-call fragments held back whole, then checked and sent complete
    at the end (an argument is checked only once the call's JSON is whole)."""

    def __init__(self, hook: PIIHook) -> None:
        self.hook = hook
        self.text = self._guard()
        self.refusal = self._guard()
        self.fragments: list[ToolCall] = []

    def _guard(self) -> StreamGuard:
        hook = self.hook
        return StreamGuard(lambda text: hook.apply(text, "output"), hook.find, hook.stream_hold)

    def piece(self, chunk: ChatResponse) -> ChatResponse:
        if not chunk.results:
            return chunk
        output = chunk.results[0].output
        update: dict[str, Any] = {}
        if output.text:
            update["text"] = self.text.feed(output.text)
        if output.refusal:
            update["refusal"] = self.refusal.feed(output.refusal) or None
        if output.tool_calls:
            self.fragments.extend(output.tool_calls)
            update["tool_calls"] = ()
        return _with_output(chunk, output.model_copy(update=update)) if update else chunk

    def rest(self) -> ChatResponse | None:
        text, refusal = self.text.flush(), self.refusal.flush()
        calls: tuple[ToolCall, ...] = ()
        if self.fragments:
            whole = ChatResponse.merge(
                [ChatResponse.of(AssistantMessage(tool_calls=tuple(self.fragments)))]
            )
            calls = tuple(
                self.hook._checked_call(call).model_copy(update={"index": index})
                for index, call in enumerate(whole.result.output.tool_calls)
            )
        if not (text or refusal or calls):
            return None
        return ChatResponse.of(AssistantMessage(text, refusal=refusal or None, tool_calls=calls))


class _GuardedModel:
    """A model whose answers pass through a ``PIIHook``: whole, or streamed with a hold-back."""

    def __init__(self, model: ChatModel, hook: PIIHook) -> None:
        self._model = model
        self._hook = hook

    def __getattr__(self, name: str) -> Any:  # the model's name, provider, capabilities
        return getattr(self._model, name)

    def call(self, prompt: Prompt) -> ChatResponse:
        return self._hook.checked_answer(self._model.call(prompt))

    async def acall(self, prompt: Prompt) -> ChatResponse:
        return self._hook.checked_answer(await self._model.acall(prompt))

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        check = _StreamCheck(self._hook)
        for chunk in self._model.stream(prompt):
            yield check.piece(chunk)
        if (rest := check.rest()) is not None:
            yield rest

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        check = _StreamCheck(self._hook)
        async for chunk in self._model.astream(prompt):
            yield check.piece(chunk)
        if (rest := check.rest()) is not None:
            yield rest
