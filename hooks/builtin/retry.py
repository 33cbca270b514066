"""Interceptors that retry failed model and tool calls, or fall back to other models."""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from checkpoint.effects import Effect, Steps, aperform, perform
from checkpoint.retry import Backoff as _Backoff
from checkpoint.retry import retried
from graph_agent.errors import ModelError, ToolArgumentsError, ToolExecutionException
from graph_agent.models import ChatModel, ChatResponse, Prompt
from graph_agent.models.effects import Answer

from ..interceptors import (
    ModelCallHandler,
    ModelInterceptor,
    ModelRequest,
    ToolCallHandler,
    ToolCallRequest,
    ToolInterceptor,
)

__all__ = [
    "Backoff",
    "ModelFallbackInterceptor",
    "ModelRetryInterceptor",
    "RetryOn",
    "Sleep",
    "ToolRetryInterceptor",
    "exponential_backoff",
]

T = TypeVar("T")
Backoff = Callable[[int], float] | float
"""Seconds to wait after failed attempt ``n`` (1, 2, ...): a function of ``n``, or a constant."""
RetryOn = type[BaseException] | tuple[type[BaseException], ...] | Callable[[BaseException], bool]
"""Which errors are retried: exception classes, or a predicate on the error."""
Sleep = Callable[[float], object]
"""How to wait: ``time.sleep``-like; in async runs its result is awaited when awaitable."""


def exponential_backoff(
    initial: float = 0.5, factor: float = 2.0, max_delay: float = 30.0
) -> Callable[[int], float]:
    """``initial * factor ** (n - 1)`` seconds after failed attempt ``n``, at most ``max_delay``
    (``checkpoint.retry.Backoff`` without jitter)."""
    if initial < 0 or factor < 1 or max_delay < 0:
        raise ValueError("exponential_backoff needs initial >= 0, factor >= 1 and max_delay >= 0")

    return _Backoff(float(initial), float(factor), float(max_delay), jitter=False).delay


def _default(backoff: Backoff | None) -> Backoff:
    return exponential_backoff() if backoff is None else backoff


def _predicate(
    retry_on: RetryOn, spare: type[BaseException] | None = None
) -> Callable[[BaseException], bool]:
    """``retry_on`` as a predicate. Errors of class ``spare`` are not retried unless
    ``retry_on`` names that class (or a subclass of it)."""
    if not isinstance(retry_on, (type, tuple)):
        return lambda error: bool(retry_on(error))
    classes = (retry_on,) if isinstance(retry_on, type) else retry_on
    spared = spare is not None and not any(issubclass(c, spare) for c in classes)

    def retries(error: BaseException) -> bool:
        if spared and spare is not None and isinstance(error, spare):
            return False
        return isinstance(error, classes)

    return retries


def _note(error: BaseException, text: str) -> None:
    add_note = getattr(error, "add_note", None)  # Python 3.11+
    if add_note is not None:
        add_note(text)


class _Handle(Effect):
    """The interceptor's call to the next handler: ``run`` calls the sync handler, ``arun``
    the async one (each interceptor method holds the handler of its own kind)."""

    __slots__ = ("handler", "request")

    def __init__(self, handler: Callable[[Any], Any], request: object) -> None:
        self.handler = handler
        self.request = request

    def run(self, context: Any) -> Any:
        return self.handler(self.request)

    def arun(self, context: Any) -> Awaitable[Any]:
        return self.handler(self.request)  # type: ignore[no-any-return]


class _Retrier:
    """The retry policy shared by the model and tool retry interceptors; the loop itself is
    ``checkpoint.retry.retried``, run by ``perform`` (sync) or ``aperform`` (async)."""

    def __init__(
        self,
        max_attempts: int,
        retry_on: Callable[[BaseException], bool],
        backoff: Backoff,
        sleep: Sleep | None,
    ) -> None:
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(f"max_attempts must be a positive int, got {max_attempts!r}")
        if isinstance(backoff, (int, float)) and backoff < 0:
            raise ValueError(f"backoff must not be negative, got {backoff!r}")
        self.max_attempts = max_attempts
        self.retry_on = retry_on
        self.backoff = backoff
        self.sleep = sleep

    def retries(self, error: BaseException) -> bool:
        return isinstance(error, Exception) and self.retry_on(error)

    def delay(self, attempt: int) -> float:
        return (
            float(self.backoff) if isinstance(self.backoff, (int, float)) else self.backoff(attempt)
        )

    def _pause_after(self, error: Exception, attempt: int, what: str) -> float | None:
        """The wait after failed attempt ``attempt``, or ``None`` to give up (then the error,
        noted with the number of attempts when there were several, propagates)."""
        if attempt >= self.max_attempts or not self.retries(error):
            if attempt > 1:
                _note(error, f"{what} failed {attempt} times (max_attempts={self.max_attempts})")
            return None
        return self.delay(attempt)

    async def _asleep(self, seconds: float) -> None:
        """The injected sleep in an async run: its result is awaited when awaitable."""
        assert self.sleep is not None
        waited = self.sleep(seconds)
        if inspect.isawaitable(waited):
            await waited

    def _steps(self, call: _Handle, what: str) -> Steps[Any]:
        """The one retry loop: ``call`` until it succeeds or the policy gives up."""

        def attempt(n: int) -> Steps[Any]:
            return (yield call)

        return retried(
            attempt,
            lambda error, n: self._pause_after(error, n, what),
            sleep=self.sleep,
            asleep=None if self.sleep is None else self._asleep,
        )

    def run(self, handler: Callable[[Any], T], request: object, what: str) -> T:
        """``handler(request)``, retried (sync)."""
        return perform(self._steps(_Handle(handler, request), what))  # type: ignore[no-any-return]

    async def arun(self, handler: Callable[[Any], Awaitable[T]], request: object, what: str) -> T:
        """``await handler(request)``, retried (async)."""
        result = await aperform(self._steps(_Handle(handler, request), what))
        return result  # type: ignore[no-any-return]


class ModelRetryInterceptor(ModelInterceptor):
    """Calls the model again when it fails with an error of ``retry_on`` (by default
    ``ModelError``), up to ``max_attempts`` calls in all, waiting ``backoff`` between them
    (``exponential_backoff()``: 0.5 s, 1 s, 2 s ... by default).

    The last failure propagates unchanged (with a note of the attempts, on Python 3.11+), so
    the agent's run fails and writes no half step. ``sleep`` replaces ``time.sleep`` /
    ``asyncio.sleep`` (tests pass a recorder). Sync and async runs retry natively, with the
    same loop (``checkpoint.retry.retried``): the same attempts and the same waits.
    """

    def __init__(
        self,
        max_attempts: int = 3,
        retry_on: RetryOn = (ModelError,),
        backoff: Backoff | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        self._retrier = _Retrier(max_attempts, _predicate(retry_on), _default(backoff), sleep)

    @property
    def max_attempts(self) -> int:
        return self._retrier.max_attempts

    def intercept_model(self, request: ModelRequest, handler: ModelCallHandler) -> ChatResponse:
        return self._retrier.run(handler, request, "the model call")

    async def aintercept_model(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ChatResponse]]
    ) -> ChatResponse:
        return await self._retrier.arun(handler, request, "the model call")


class ToolRetryInterceptor(ToolInterceptor):
    """Runs a tool again when it fails with an error of ``retry_on`` (by default
    ``ToolExecutionException``, which is what a failing tool raises), up to ``max_attempts``
    runs in all, waiting ``backoff`` between them. ``tools`` limits it to those tool names
    (``None``: every tool).

    Invalid arguments (``ToolArgumentsError``) are not retried, since the same arguments fail
    the same way, unless ``retry_on`` names that class. The last failure propagates to the
    agent's tool handling (by default its message becomes the tool result for the model).
    """

    def __init__(
        self,
        max_attempts: int = 3,
        retry_on: RetryOn = (ToolExecutionException,),
        tools: Iterable[str] | None = None,
        backoff: Backoff | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        self._retrier = _Retrier(
            max_attempts, _predicate(retry_on, spare=ToolArgumentsError), _default(backoff), sleep
        )
        self.tools: frozenset[str] | None = None if tools is None else frozenset(tools)
        if isinstance(tools, str):
            raise TypeError(f"tools must be a list of tool names, got the string {tools!r}")

    @property
    def max_attempts(self) -> int:
        return self._retrier.max_attempts

    def _applies(self, request: ToolCallRequest) -> bool:
        return self.tools is None or request.tool_call.name in self.tools

    def intercept_tool_call(self, request: ToolCallRequest, handler: ToolCallHandler) -> str:
        if not self._applies(request):
            return handler(request)
        return self._retrier.run(handler, request, f"tool '{request.tool_call.name}'")

    async def aintercept_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[str]]
    ) -> str:
        if not self._applies(request):
            return await handler(request)
        return await self._retrier.arun(handler, request, f"tool '{request.tool_call.name}'")


class ModelFallbackInterceptor(ModelInterceptor):
    """When the model call fails (any ``Exception``, or only ``fallback_on``), asks each of
    ``fallback_models`` in turn with the same prompt (messages, tools and options) and returns
    the first answer.

    If all fail, the last error propagates, with the earlier ones noted (Python 3.11+) and
    chained as its ``__context__``. The fallbacks are called with ``call``/``acall``, so their
    answers are not streamed by ``stream_messages``.
    """

    def __init__(
        self,
        *fallback_models: ChatModel,
        fallback_on: tuple[type[BaseException], ...] = (Exception,),
    ) -> None:
        if not fallback_models:
            raise ValueError("ModelFallbackInterceptor needs at least one fallback model")
        for model in fallback_models:
            if not isinstance(model, ChatModel):
                raise TypeError(f"fallback models must be ChatModels, got {model!r}")
        self.fallback_models: tuple[ChatModel, ...] = fallback_models
        self.fallback_on = fallback_on

    def _failed(self, errors: list[BaseException]) -> BaseException:
        last = errors[-1]
        for earlier, later in itertools.pairwise(errors):
            if later.__context__ is None:
                later.__context__ = earlier
        for index, error in enumerate(errors[:-1]):
            who = "the primary model" if index == 0 else f"fallback model {index}"
            _note(last, f"{who} failed first: {type(error).__name__}: {error}")
        return last

    def _steps(self, first: _Handle, prompt: Prompt) -> Steps[ChatResponse]:
        """The fallback loop, once: ``first`` (the call to the next handler), then each
        fallback model (``Answer``: a ``StopIteration`` escaping one is a ``ModelError``)
        until one answers."""
        errors: list[BaseException] = []
        answer: ChatResponse
        try:
            answer = yield first
            return answer
        except self.fallback_on as error:
            errors.append(error)
        for model in self.fallback_models:
            try:
                answer = yield Answer(model, prompt)
                return answer
            except self.fallback_on as error:
                errors.append(error)
        raise self._failed(errors)

    def intercept_model(self, request: ModelRequest, handler: ModelCallHandler) -> ChatResponse:
        return perform(self._steps(_Handle(handler, request), request.prompt))

    async def aintercept_model(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ChatResponse]]
    ) -> ChatResponse:
        return await aperform(self._steps(_Handle(handler, request), request.prompt))
