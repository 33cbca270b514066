"""Deterministic offline chat models for tests, examples and the demo."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from typing import TypeAlias

from ..errors import ModelError
from ..messages import AssistantMessage
from .types import ChatResponse, Prompt

__all__ = ["FunctionChatModel", "ScriptedChatModel"]

Reply: TypeAlias = AssistantMessage | str | ChatResponse | BaseException


def _response(reply: AssistantMessage | str | ChatResponse) -> ChatResponse:
    if isinstance(reply, ChatResponse):
        return reply
    message = AssistantMessage(reply) if isinstance(reply, str) else reply
    return ChatResponse.of(message, "tool_calls" if message.tool_calls else "stop")


def _chunks(response: ChatResponse) -> Iterator[ChatResponse]:
    """The response as a stream would deliver it: text word by word, the refusal, then each
    tool call, then the finish reason and usage."""
    message = response.result.output
    words = message.text.split(" ")
    for i, word in enumerate(words):
        piece = word if i == len(words) - 1 else word + " "
        if piece:
            yield ChatResponse.of(AssistantMessage(piece))
    if message.refusal:
        yield ChatResponse.of(AssistantMessage("", refusal=message.refusal))
    for call in message.tool_calls:  # whole calls: their distinct ids keep them apart
        yield ChatResponse.of(AssistantMessage("", tool_calls=(call,)))
    yield ChatResponse(
        results=(
            response.result.__class__(
                AssistantMessage("", metadata=message.metadata), response.result.finish_reason
            ),
        ),
        metadata=response.metadata,
    )


class ScriptedChatModel:
    """Plays back ``responses`` in order, one per call, and records every prompt in ``prompts``.

    A response is an ``AssistantMessage``, a plain string (an answer), a ``ChatResponse``, or
    an exception instance (raised by that call, to script a failure). When the script runs
    out the call raises ``ModelError`` naming how many responses were scripted. Streaming
    yields the same response in chunks. Thread-safe.

    ``supports_native_output`` (default ``False``) is what the model declares to a
    ``ReactAgent`` with an ``output_type``: ``True`` scripts a model that takes a
    ``response_format`` json_schema (the agent's ``"auto"`` strategy is then ``"native"``).
    """

    provider_name = "scripted"  # gen_ai.provider.name in traces

    def __init__(self, responses: Iterable[Reply], *, supports_native_output: bool = False) -> None:
        self.supports_native_output = supports_native_output
        self.responses: list[Reply] = list(responses)
        self.prompts: list[Prompt] = []
        self._next = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ScriptedChatModel({len(self.responses)} responses, {self._next} used)"

    @property
    def remaining(self) -> int:
        return len(self.responses) - self._next

    def _take(self, prompt: Prompt) -> ChatResponse:
        with self._lock:
            self.prompts.append(prompt)
            if self._next >= len(self.responses):
                raise ModelError(
                    f"ScriptedChatModel ran out of responses: it was given "
                    f"{len(self.responses)} and this is call {self._next + 1}. Add a response "
                    "for this call to the script"
                )
            reply = self.responses[self._next]
            self._next += 1
        if isinstance(reply, BaseException):
            raise reply
        return _response(reply)

    def call(self, prompt: Prompt) -> ChatResponse:
        return self._take(prompt)

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        yield from _chunks(self._take(prompt))

    async def acall(self, prompt: Prompt) -> ChatResponse:
        return self._take(prompt)

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        for chunk in _chunks(self._take(prompt)):
            await asyncio.sleep(0)
            yield chunk


ReplyFunction: TypeAlias = Callable[[Prompt], AssistantMessage | str | ChatResponse]


class FunctionChatModel:
    """A model whose answer is ``fn(prompt)``: an ``AssistantMessage``, a string or a
    ``ChatResponse`` (an async ``fn`` works with ``acall``/``astream``). Records prompts.
    ``supports_native_output`` as for ``ScriptedChatModel``."""

    provider_name = "function"  # gen_ai.provider.name in traces

    def __init__(
        self,
        fn: ReplyFunction | Callable[[Prompt], Awaitable[AssistantMessage | str | ChatResponse]],
        *,
        supports_native_output: bool = False,
    ) -> None:
        self.supports_native_output = supports_native_output
        self.fn = fn
        self.prompts: list[Prompt] = []

    def __repr__(self) -> str:
        return f"FunctionChatModel({getattr(self.fn, '__name__', self.fn)!r})"

    def call(self, prompt: Prompt) -> ChatResponse:
        self.prompts.append(prompt)
        reply = self.fn(prompt)
        if inspect.isawaitable(reply):
            if inspect.iscoroutine(reply):
                reply.close()
            raise ModelError("FunctionChatModel's function is async; use acall()/astream()")
        return _response(reply)

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        yield from _chunks(self.call(prompt))

    async def acall(self, prompt: Prompt) -> ChatResponse:
        self.prompts.append(prompt)
        reply = self.fn(prompt)
        if inspect.isawaitable(reply):
            reply = await reply
        return _response(reply)

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        for chunk in _chunks(await self.acall(prompt)):
            yield chunk
