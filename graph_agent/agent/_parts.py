"""What an agent's nodes share: its model, tools, prompt, interceptors and state strategies."""

from __future__ import annotations

import contextvars
import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ToolResolutionError
from ..graph import KeyStrategyLike, OverAllState, RunnableConfig
from ..messages import AssistantMessage, Message, SystemMessage
from ..models import ChatModel, ToolCallingChatOptions
from ..tools import (
    ToolCallback,
    ToolCallingManager,
    ToolContext,
    ToolProvider,
    ToolProviderRequest,
    as_tool_callbacks,
)

if TYPE_CHECKING:
    from hooks import ModelInterceptor

MESSAGES = "messages"
JUMP_TO = "jump_to"
REJECTED = "rejected_tool_calls"
OFFERED = "offered_tools"  # state key: the tools the model was offered for its tool calls
PRIVATE_KEYS = (JUMP_TO, OFFERED, REJECTED)  # the agent's bookkeeping, kept from callers


class OfferedTools:
    """The tools of the request that reached the model, after every interceptor; ``tools``
    stays ``None`` when an interceptor answered without calling the model."""

    __slots__ = ("tools",)

    def __init__(self) -> None:
        self.tools: list[ToolCallback] | None = None


offered_sink: contextvars.ContextVar[OfferedTools | None] = contextvars.ContextVar(
    "graph_agent_offered_tools", default=None
)


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


@dataclasses.dataclass(frozen=True)
class AgentParts:
    """The fixed pieces of one agent, read by its nodes."""

    name: str
    model: ChatModel
    system_text: str | None
    tools: tuple[ToolCallback, ...]
    tool_providers: tuple[ToolProvider, ...]
    manager: ToolCallingManager
    model_interceptors: tuple[ModelInterceptor, ...]
    tool_context: Mapping[str, Any]
    store: Any
    output_key: str | None
    strategies: Mapping[str, KeyStrategyLike]
    # Tools model interceptors declare they may add (``ModelInterceptor.tools``), by name.
    interceptor_tools: Mapping[str, ToolCallback] = dataclasses.field(default_factory=dict)
    offered: OfferedByThread = dataclasses.field(default_factory=OfferedByThread)

    def tools_offered_for(
        self,
        earlier: Sequence[Message],
        state: OverAllState,
        config: RunnableConfig,
    ) -> list[ToolCallback]:
        """The tools the last model call's tool calls may use: those the model was offered
        (after interceptors; their names are kept with the thread), or, without that record,
        the agent's tools. A name is looked up among the tools this thread was offered in
        this process, then the agent's tools, then the tools interceptors declare."""
        tools = self.tools_for(earlier, state, config)
        names = state.get(OFFERED)
        if names is None:
            return tools
        by_name = {t.tool_definition.name: t for t in tools}
        # Only model interceptors offer other tools than the agent's own.
        seen = self.offered.get(config.thread_id) if self.model_interceptors else {}
        found = (seen.get(n) or by_name.get(n) or self.interceptor_tools.get(n) for n in names)
        return [t for t in found if t is not None]

    def tools_for(
        self, messages: Sequence[Message], state: OverAllState, config: RunnableConfig
    ) -> list[ToolCallback]:
        """The agent's tools plus what its providers offer for these messages."""
        if not self.tool_providers:
            return list(self.tools)
        request = ToolProviderRequest(messages=messages, state=state, config=config)
        offered = [tool for p in self.tool_providers for tool in as_tool_callbacks(p(request))]
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

    def prompt_messages(self, state: OverAllState) -> list[Message]:
        """What the model sees: the system prompt (never stored), then the conversation."""
        conversation = list(state.get(MESSAGES) or ())
        if self.system_text:
            return [SystemMessage(self.system_text), *conversation]
        return conversation

    def options(self, tools: Sequence[ToolCallback]) -> ToolCallingChatOptions:
        return ToolCallingChatOptions(
            tool_callbacks=tuple(tools),
            tool_context=dict(self.tool_context),
        )

    def tool_context_for(self, state: OverAllState, config: RunnableConfig) -> ToolContext:
        return ToolContext(
            {**self.tool_context, "state": state, "config": config, "store": self.store}
        )

    def note_offered(self, tools: Sequence[ToolCallback]) -> None:
        """Called with the tools of the request that reached the model."""
        sink = offered_sink.get()
        if sink is not None:
            sink.tools = list(tools)

    def answer_update(
        self, state: OverAllState, message: AssistantMessage, offered: Sequence[ToolCallback] = ()
    ) -> dict[str, Any]:
        update: dict[str, Any] = {MESSAGES: [message]}
        if message.tool_calls:  # the tool node runs only what the model was offered
            # A tuple: it cannot change, so the saver and every state share it (and the
            # garbage collector does not track it). The same names again are not written.
            names = tuple(t.tool_definition.name for t in offered)
            held = state.get(OFFERED)
            if held is None or tuple(held) != names:
                update[OFFERED] = names
        if self.output_key and not message.tool_calls:
            update[self.output_key] = message.answer
        return cleared(state, update)


def cleared(state: OverAllState, update: dict[str, Any]) -> dict[str, Any]:
    """``update``, clearing a ``jump_to`` that brought the run here (a jump happens once)."""
    if JUMP_TO not in update and state.get(JUMP_TO) is not None:
        update[JUMP_TO] = None
    return update


def last_message(state: OverAllState) -> Message | None:
    messages = state.get(MESSAGES) or ()
    return messages[-1] if messages else None
