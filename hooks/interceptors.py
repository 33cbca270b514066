"""Interceptors: wrap every model call or tool call of an agent (retry, rewrite, short-circuit)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from checkpoint.slots import slot_setters
from graph_agent.graph import OverAllState, RunnableConfig, run_coroutine_sync
from graph_agent.messages import Message
from graph_agent.models import ChatResponse, Prompt, ToolCallingChatOptions
from graph_agent.tools.manager import ToolCallRequest

__all__ = [
    "ModelCallHandler",
    "ModelInterceptor",
    "ModelRequest",
    "ToolCallHandler",
    "ToolCallRequest",
    "ToolInterceptor",
]


@dataclasses.dataclass(frozen=True, slots=True, init=False)
class ModelRequest:
    """One model call of an agent: the messages sent (system prompt first), the options with
    the tools offered, and the agent's state and config at that point."""

    messages: Sequence[Message]
    options: ToolCallingChatOptions
    state: OverAllState | None = None
    config: RunnableConfig | None = None

    def __init__(
        self,
        messages: Sequence[Message],
        options: ToolCallingChatOptions,
        state: OverAllState | None = None,
        config: RunnableConfig | None = None,
    ) -> None:
        # The fields set through their slots (one C call each), not object.__setattr__ per
        # field as a frozen dataclass's generated __init__ does: one request per model call.
        set_messages, set_options, set_state, set_config = _REQUEST_FIELDS
        set_messages(self, messages)
        set_options(self, options)
        set_state(self, state)
        set_config(self, config)

    @property
    def prompt(self) -> Prompt:
        return Prompt(self.messages, self.options)  # (a Prompt has a list of its own)

    def replace(self, **changes: Any) -> ModelRequest:
        """A copy with fields changed, e.g. ``request.replace(messages=shorter)``."""
        return dataclasses.replace(self, **changes)


_REQUEST_FIELDS = slot_setters(ModelRequest)

ModelCallHandler = Callable[[ModelRequest], ChatResponse]
ToolCallHandler = Callable[[ToolCallRequest], str]

_Request = TypeVar("_Request")
_Result = TypeVar("_Result")


def _overrides(obj: object, base: type, name: str) -> bool:
    return getattr(type(obj), name) is not getattr(base, name)


def _sync_default(
    interceptor: object,
    base: type,
    twin: str,
    request: _Request,
    handler: Callable[[_Request], _Result],
) -> _Result:
    """What a sync intercept method does unless a subclass overrides it: the async ``twin``
    on the run's loop when the subclass overrides that one, else the call itself."""
    if _overrides(interceptor, base, twin):
        result: _Result = _run_sync(getattr(interceptor, twin)(request, _to_async(handler)))
        return result
    return handler(request)


async def _async_default(
    interceptor: object,
    base: type,
    twin: str,
    request: _Request,
    handler: Callable[[_Request], Awaitable[_Result]],
) -> _Result:
    """What an async intercept method does unless a subclass overrides it: the sync ``twin``
    in a worker thread when the subclass overrides that one, else the call itself."""
    if _overrides(interceptor, base, twin):
        result: _Result = await _in_thread(getattr(interceptor, twin), request, handler)
        return result
    return await handler(request)


class ModelInterceptor:
    """Wraps the agent's model calls; the first interceptor of the list is outermost.

    Override ``intercept_model(request, handler)``: call ``handler(request)`` (perhaps with a
    changed request, perhaps several times) or return a ``ChatResponse`` without calling it.
    ``aintercept_model`` is the async twin; override the one you need. An interceptor that
    has only the sync method still works in async runs (it runs in a worker thread and its
    ``handler`` calls back into the loop), and one with only the async method in sync runs.

    ``tools`` lists the tools this interceptor may add to a request. The agent runs a tool
    call only for a tool the model was offered in that conversation; declaring the tools
    here lets a conversation paused between the model's call and the tool run (for an
    approval, after a failure) run them in any process, after a restart too.
    """

    tools: Sequence[Any] = ()

    def intercept_model(self, request: ModelRequest, handler: ModelCallHandler) -> ChatResponse:
        return _sync_default(self, ModelInterceptor, "aintercept_model", request, handler)

    async def aintercept_model(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ChatResponse]]
    ) -> ChatResponse:
        return await _async_default(self, ModelInterceptor, "intercept_model", request, handler)


class ToolInterceptor:
    """Wraps each tool call of the agent; the first interceptor of the list is outermost.

    Override ``intercept_tool_call(request, handler)``: return ``handler(request)`` (the
    tool's text; it raises ``ToolExecutionException`` when the tool fails), a changed
    request's result, or text of your own without running the tool. ``aintercept_tool_call``
    is the async twin; either one alone works in both kinds of run.
    """

    def intercept_tool_call(self, request: ToolCallRequest, handler: ToolCallHandler) -> str:
        return _sync_default(self, ToolInterceptor, "aintercept_tool_call", request, handler)

    async def aintercept_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[str]]
    ) -> str:
        return await _async_default(self, ToolInterceptor, "intercept_tool_call", request, handler)


def _to_async(handler: Callable[[Any], Any]) -> Callable[[Any], Awaitable[Any]]:
    async def call(request: Any) -> Any:
        return await asyncio.to_thread(handler, request)

    return call


def _run_sync(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """An async-only interceptor in a sync run: on the run's one event loop."""
    return run_coroutine_sync(coroutine)


async def _in_thread(
    method: Callable[[Any, Callable[[Any], Any]], Any],
    request: Any,
    handler: Callable[[Any], Awaitable[Any]],
) -> Any:
    """Run a sync intercept method in a worker thread; its handler runs on this loop."""
    loop = asyncio.get_running_loop()

    def call_back(changed: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(handler(changed), loop).result()  # type: ignore[arg-type]

    return await asyncio.to_thread(method, request, call_back)
