"""The agent's tools as its nodes see them: what a model call is offered, what a tool call may
use, and the innermost tool interceptor that answers rejected calls.

A leaf of the agent package: the nodes (``_model_node``, ``_tool_node``) call into it, it calls nothing back.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import ToolResolutionError
from ..graph import OverAllState, RunnableConfig
from ..messages import Message
from ..models import ToolCallingChatOptions
from ..tools import (
    ToolCallback,
    ToolCallRequest,
    ToolProviderRequest,
    as_tool_callbacks,
)
from ..tools.context import STATE
from ..tools.request import answered
from ._keys import OFFERED, REJECTED

if TYPE_CHECKING:
    from ._parts import AgentParts

_NONE_SEEN: Mapping[str, ToolCallback] = {}


class OfferedByThread:
    """The tool objects each conversation's model was last offered, by thread id: a tool an
    interceptor added for one conversation is found by that conversation's tool node only.
    Bounded (least recently used threads go first); what is gone is found again through the
    tools interceptors declare (``ModelInterceptor.tools``)."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._threads: OrderedDict[str, dict[str, ToolCallback]] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, thread_id: str, tools: Sequence[ToolCallback]) -> None:
        with self._lock:
            self._threads[thread_id] = {t.tool_definition.name: t for t in tools}
            self._threads.move_to_end(thread_id)
            while len(self._threads) > self.capacity:
                self._threads.popitem(last=False)

    def get(self, thread_id: str) -> Mapping[str, ToolCallback]:
        return self._threads.get(thread_id, {})  # a read of one item needs no lock


class AgentTools:
    """The agent's tools, its tool providers, the tools its model interceptors declare, and
    what each conversation's model was offered; made once from the agent's parts and shared
    by the model node (``options_for``, ``remember``) and the tool node (``for_tool_calls``)."""

    __slots__ = (
        "final_tools",
        "intercepted",
        "interceptor_tools",
        "last_options",
        "name",
        "offered",
        "own_by_name",
        "providers",
        "response_format",
        "tool_context",
        "tools",
    )

    def __init__(self, parts: AgentParts) -> None:
        self.name = parts.name  # the agent's, for error messages
        self.tools = tuple(parts.tools)
        # The agent's own tools by name, made once (looked up at each tool step).
        self.own_by_name = {t.tool_definition.name: t for t in self.tools}
        self.providers = tuple(parts.tool_providers)
        # Tools model interceptors declare they may add (``ModelInterceptor.tools``), by name.
        self.interceptor_tools = parts.interceptor_tools
        # Only model interceptors offer other tools than the agent's own.
        self.intercepted = bool(parts.model_interceptors)
        self.offered = OfferedByThread()
        self.tool_context = parts.tool_context
        output = parts.output
        # With an ``output_type``: its final-answer tools beside the agent's own (never
        # instead of them), and the structured-output format of every request (``native``).
        self.final_tools = output.final_tools if output is not None else ()
        self.response_format = output.response_format if output is not None else None
        self.last_options: ToolCallingChatOptions | None = None

    def options_for(
        self, messages: Sequence[Message], state: OverAllState, config: RunnableConfig
    ) -> ToolCallingChatOptions:
        """The options of a model request on ``messages``: the tools offered, the agent's
        ``tool_context`` and the response format. The last request's options again while the
        tools offered are the same objects and its ``tool_context`` still holds the agent's
        entries (options are frozen; making one, 17 fields checked, costs more than the rest
        of a request)."""
        offered = self.for_messages(messages, state, config)
        if self.final_tools:
            offered.extend(self.final_tools)
        last = self.last_options
        if (
            last is not None
            and len(last.tool_callbacks) == len(offered)
            and all(map(operator.is_, last.tool_callbacks, offered))
            and last.tool_context == self.tool_context
        ):
            return last
        self.last_options = made = ToolCallingChatOptions(
            tool_callbacks=tuple(offered),
            tool_context=dict(self.tool_context),
            response_format=self.response_format,
        )
        return made

    def for_messages(
        self, messages: Sequence[Message], state: OverAllState, config: RunnableConfig
    ) -> list[ToolCallback]:
        """The agent's tools plus what its providers offer for these messages."""
        if not self.providers:
            return list(self.tools)
        request = ToolProviderRequest(messages=messages, state=state, config=config)
        offered = [tool for p in self.providers for tool in as_tool_callbacks(p(request))]
        by_name = {t.tool_definition.name: t for t in self.tools}
        for tool in offered:
            name = tool.tool_definition.name
            if name in by_name and by_name[name] is not tool:
                raise ToolResolutionError(
                    f"agent '{self.name}': a tool provider offered '{name}', a name another "
                    "tool of the agent already has; tool names must be unique"
                )
            by_name[name] = tool
        return list(by_name.values())

    def for_tool_calls(
        self, earlier: Sequence[Message], state: OverAllState, config: RunnableConfig
    ) -> list[ToolCallback]:
        """The tools the last model call's tool calls may use: those the model was offered
        (after interceptors; their names are kept with the thread), or, without that record,
        the agent's tools. A name is looked up among the tools this thread was offered in
        this process, then the agent's tools, then the tools interceptors declare."""
        names = state.get(OFFERED)
        if names is None:
            return self.for_messages(earlier, state, config)
        if self.providers:
            by_name = {t.tool_definition.name: t for t in self.for_messages(earlier, state, config)}
        else:  # the agent's own tools: the same dict at every step
            by_name = self.own_by_name
        seen = self.offered.get(config.thread_id) if self.intercepted else _NONE_SEEN
        declared = self.interceptor_tools
        tools: list[ToolCallback] = []
        for name in names:
            tool = seen.get(name) or by_name.get(name) or declared.get(name)
            if tool is not None:
                tools.append(tool)
        return tools

    def remember(self, thread_id: str, offered: Sequence[ToolCallback]) -> None:
        """Keep the tools this thread's model was offered (only interceptors change them)."""
        if self.intercepted:
            self.offered.remember(thread_id, offered)


class RejectedToolCalls:
    """Answers the calls a human rejected (``state["rejected_tool_calls"]``: call id ->
    reason) with the reason, instead of running them. The agent's innermost interceptor."""

    def intercept_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], str]
    ) -> str:
        reason = self._reason(request)
        return handler(request) if reason is None else reason

    def aintercept_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[str]]
    ) -> Awaitable[str]:
        # not async: the handler's own awaitable is returned, no coroutine waits around it
        reason = self._reason(request)
        return handler(request) if reason is None else answered(reason)

    @staticmethod
    def _reason(request: ToolCallRequest) -> str | None:
        state = request.tool_context.context.get(STATE)  # request.state, without two properties
        rejected: Mapping[str, str] | None = state.get(REJECTED) if state is not None else None
        if not rejected or request.tool_call.id not in rejected:
            return None
        return f"The user rejected this tool call: {rejected[request.tool_call.id]}"
