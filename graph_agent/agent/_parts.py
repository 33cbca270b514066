"""What an agent's nodes share: its model, tools, prompt, interceptors and state strategies."""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ToolResolutionError
from ..graph import KeyStrategy, KeyStrategyLike, OverAllState, Overwrite, RunnableConfig
from ..messages import AssistantMessage, Message, SystemMessage
from ..models import ChatModel, ToolCallingChatOptions
from ..tools import ToolCallback, ToolCallingManager, ToolContext, ToolProvider, ToolProviderRequest
from ..tools._collect import as_tool_callbacks

if TYPE_CHECKING:
    from hooks import ModelInterceptor

MESSAGES = "messages"
JUMP_TO = "jump_to"
REJECTED = "rejected_tool_calls"
_NOTHING: Any = object()

OFFERED = "offered_tools"  # state key: the tools the model was offered for its tool calls


class TextSink:
    """Where ``stream_messages`` sends the model's text: ``put`` per chunk, for the agent
    ``owner`` only (an agent called from inside a tool does not stream into it); ``streamed``
    is the text of the latest model call."""

    __slots__ = ("owner", "put", "streamed")

    def __init__(self, owner: AgentParts, put: Callable[[str], None]) -> None:
        self.owner = owner
        self.put = put
        self.streamed = ""


text_sink: contextvars.ContextVar[TextSink | None] = contextvars.ContextVar(
    "graph_agent_text_sink", default=None
)


class OfferedTools:
    """The tools of the request that reached the model, after every interceptor; ``tools``
    stays ``None`` when an interceptor answered without calling the model."""

    __slots__ = ("tools",)

    def __init__(self) -> None:
        self.tools: list[ToolCallback] | None = None


offered_sink: contextvars.ContextVar[OfferedTools | None] = contextvars.ContextVar(
    "graph_agent_offered_tools", default=None
)


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
    # Every tool offered to the model so far, by name: an interceptor may offer tools the
    # agent was not built with, and the tool node must find them.
    offered: dict[str, ToolCallback] = dataclasses.field(default_factory=dict)

    def tools_offered_for(
        self,
        earlier: Sequence[Message],
        state: OverAllState,
        config: RunnableConfig,
    ) -> list[ToolCallback]:
        """The tools the last model call's tool calls may use: those the model was offered
        (after interceptors), or, without that record, the agent's tools."""
        tools = self.tools_for(earlier, state, config)
        names = state.get(OFFERED)
        if names is None:
            return tools
        by_name = {t.tool_definition.name: t for t in tools}
        found = (by_name.get(n) or self.offered.get(n) for n in names)
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
            parallel_tool_calls=None,
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
        for tool in tools:
            self.offered[tool.tool_definition.name] = tool

    def answer_update(
        self, state: OverAllState, message: AssistantMessage, offered: Sequence[ToolCallback] = ()
    ) -> dict[str, Any]:
        update: dict[str, Any] = {MESSAGES: [message]}
        if message.tool_calls:  # the tool node runs only what the model was offered
            update[OFFERED] = [t.tool_definition.name for t in offered]
        if self.output_key and not message.tool_calls:
            update[self.output_key] = message.text
        return cleared(state, update)

    def fold_extra_states(self, extra_states: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """What the tools of one batch wrote to ``extra_state``, combined in call order by
        each key's strategy (REPLACE: the last call wins)."""
        folded: dict[str, Any] = {}
        for extra in extra_states:
            for key, value in extra.items():
                folded[key] = self._fold(key, folded.get(key, _NOTHING), value)
        return folded

    def _fold(self, key: str, old: Any, new: Any) -> Any:
        """One write for ``key`` from an earlier call's (``old``) and a later call's."""
        if isinstance(new, Overwrite):
            return new
        if isinstance(old, Overwrite):
            return Overwrite(self._fold(key, old.value, new))
        strategy = self.strategies.get(key, KeyStrategy.REPLACE)
        if strategy is KeyStrategy.APPEND:  # a single item is one item, as in the state
            items = list(new) if isinstance(new, (list, tuple)) else [new]
            return items if old is _NOTHING else [*old, *items]
        if old is _NOTHING or strategy is KeyStrategy.REPLACE:
            return new
        if strategy is KeyStrategy.MERGE:
            return {**old, **new}
        return strategy(old, new)


def cleared(state: OverAllState, update: dict[str, Any]) -> dict[str, Any]:
    """``update``, clearing a ``jump_to`` that brought the run here (a jump happens once)."""
    if JUMP_TO not in update and state.get(JUMP_TO) is not None:
        update[JUMP_TO] = None
    return update


def last_message(state: OverAllState) -> Message | None:
    messages = state.get(MESSAGES) or ()
    return messages[-1] if messages else None
