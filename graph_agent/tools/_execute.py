"""The innermost handler of a tool call's interceptor chain: the tool's own call."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING

from .callback import ToolCallback
from .execution import unknown_tool_response

if TYPE_CHECKING:
    from .manager import ToolCallingManager, ToolCallRequest

__all__ = ["AExecute", "Execute", "answered"]


class Execute:
    """The innermost handler of the interceptor chain: the tool's own call. (A class, not a
    closure: one object per call instead of a function and a cell per variable it reads.)"""

    __slots__ = ("by_name", "manager", "reached")

    def __init__(
        self,
        manager: ToolCallingManager,
        by_name: Mapping[str, ToolCallback],
    ) -> None:
        self.manager = manager
        self.by_name = by_name
        # the request as it finally reached the tool (an interceptor may have rewritten it)
        self.reached: ToolCallRequest | None = None

    def unknown(self, request: ToolCallRequest) -> str:
        return unknown_tool_response(
            self.manager.unknown_tool_strategy, request.tool_call.name, sorted(self.by_name)
        )

    def __call__(self, request: ToolCallRequest) -> str:
        self.reached = request
        if request.tool is None:
            return self.unknown(request)
        return request.tool.call(request.tool_call.arguments, request.tool_context)


class AExecute(Execute):
    __slots__ = ()

    def __call__(self, request: ToolCallRequest) -> Awaitable[str]:  # type: ignore[override]
        self.reached = request
        if request.tool is None:
            return answered(self.unknown(request))
        # the tool's own coroutine, not one awaiting it: one object less while a tool runs
        return request.tool.acall(request.tool_call.arguments, request.tool_context)


async def answered(text: str) -> str:
    """``text`` as an awaitable, for a handler that has its answer without running a tool."""
    return text
