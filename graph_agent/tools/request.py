"""One tool call as the interceptors see it, and as it is recorded once it ran.

``ToolCallRequest`` is the call about to run, ``ToolCallInterceptor`` what wraps it,
``answered`` the awaitable an async interceptor returns when it answers without calling on,
and ``ToolExecutionRecord`` what is kept of the call. (Public names; ``graph_agent.tools``
and ``graph_agent.tools.manager`` export them too.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from checkpoint.slots import slot_setters

from ..messages import ToolCall
from .callback import ToolCallback
from .context import ToolContext

__all__ = ["ToolCallInterceptor", "ToolCallRequest", "ToolExecutionRecord", "answered"]


@dataclasses.dataclass(frozen=True, slots=True, init=False)
class ToolExecutionRecord:
    """One executed tool call: what was asked, what the model got back, how long it took.

    ``error`` is the failure (invalid arguments, the tool raised, unknown tool) even when it
    was turned into a response for the model; ``result`` is that response text.
    """

    tool_call_id: str
    name: str
    arguments: str
    result: str
    error: BaseException | None
    duration: float
    return_direct: bool

    def __init__(
        self,
        tool_call_id: str,
        name: str,
        arguments: str,
        result: str,
        error: BaseException | None,
        duration: float,
        return_direct: bool,
    ) -> None:
        s_id, s_name, s_arguments, s_result, s_error, s_duration, s_direct = _RECORD_SETTERS
        s_id(self, tool_call_id)
        s_name(self, name)
        s_arguments(self, arguments)
        s_result(self, result)
        s_error(self, error)
        s_duration(self, duration)
        s_direct(self, return_direct)


_RECORD_SETTERS = slot_setters(ToolExecutionRecord)


@dataclasses.dataclass(frozen=True, slots=True, init=False)
class ToolCallRequest:
    """One tool call about to run: the model's call, the tool it names (``None`` when there is
    no such tool) and the call's context (``state`` and ``config`` inside an agent)."""

    tool_call: ToolCall
    tool: ToolCallback | None
    tool_context: ToolContext

    def __init__(
        self, tool_call: ToolCall, tool: ToolCallback | None, tool_context: ToolContext
    ) -> None:
        s_call, s_tool, s_context = _REQUEST_SETTERS
        s_call(self, tool_call)
        s_tool(self, tool)
        s_context(self, tool_context)

    @property
    def state(self) -> Any:
        return self.tool_context.state

    @property
    def config(self) -> Any:
        return self.tool_context.config

    def replace(self, **changes: Any) -> ToolCallRequest:
        """A copy with fields changed, e.g. ``request.replace(tool_call=edited_call)``."""
        return dataclasses.replace(self, **changes)


_REQUEST_SETTERS = slot_setters(ToolCallRequest)


class ToolCallInterceptor(Protocol):
    """Wraps tool calls: ``intercept_tool_call(request, handler)`` returns the tool's text
    (usually ``handler(request)``) and ``aintercept_tool_call`` is its async twin, usually an
    ``async def`` that awaits ``handler(request)``; any method returning an awaitable of the
    text will do (one that passes on ``handler(request)`` as it is adds no coroutine)."""

    def intercept_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], str]
    ) -> str: ...

    def aintercept_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[str]],
    ) -> Awaitable[str]: ...


async def answered(text: str) -> str:
    """``text`` as an awaitable, for a handler that has its answer without running a tool
    (an ``aintercept_tool_call`` that is no ``async def`` and answers without ``handler``)."""
    return text
