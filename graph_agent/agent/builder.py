"""``ReactAgent.builder()``: the agent's options, one method each."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from checkpoint import BaseCheckpointSaver

    from ..graph import KeyStrategyLike
    from ..models import ChatModel
    from ..tools import ToolCallbackResolver, ToolProvider

__all__ = ["ReactAgentBuilder"]

Agent = TypeVar("Agent")


class ReactAgentBuilder(Generic[Agent]):
    """Collects options and ``build()``s a ``ReactAgent``; every method returns the builder.
    Get one with ``ReactAgent.builder()``.

    List options (``tools``, ``hooks``, ...) accumulate across calls. ``build()`` checks
    everything at once and raises ``AgentBuildError`` listing every problem.
    """

    def __init__(self, make: Callable[..., Agent]) -> None:
        self._make = make  # the agent class: the builder passes it the options as keywords
        self._options: dict[str, Any] = {}

    def _set(self, key: str, value: Any) -> ReactAgentBuilder[Agent]:
        self._options[key] = value
        return self

    def _add(self, key: str, values: tuple[Any, ...]) -> ReactAgentBuilder[Agent]:
        self._options.setdefault(key, []).extend(values)
        return self

    def name(self, name: str) -> ReactAgentBuilder[Agent]:
        return self._set("name", name)

    def model(self, model: ChatModel) -> ReactAgentBuilder[Agent]:
        return self._set("model", model)

    def tools(self, *tools: Any) -> ReactAgentBuilder[Agent]:
        """``@tool`` functions, other ``ToolCallback``s, or objects with ``@tool`` methods."""
        return self._add("tools", tools)

    def method_tools(self, *objects: Any) -> ReactAgentBuilder[Agent]:
        """Objects whose ``@tool`` methods become tools."""
        return self._add("method_tools", objects)

    def tool_callback_providers(self, *providers: Any) -> ReactAgentBuilder[Agent]:
        """``ToolCallbackProvider``s: their tools are taken once, at ``build()``. A provider
        that is also a ``ToolProvider`` (callable with a request, as ``McpToolProvider`` is)
        is asked at every model call instead, so a list that changes is seen."""
        return self._add("tool_callback_providers", providers)

    def tool_names(self, *names: str) -> ReactAgentBuilder[Agent]:
        """Tools by name, resolved by ``resolver`` at ``build()``."""
        return self._add("tool_names", names)

    def resolver(self, resolver: ToolCallbackResolver) -> ReactAgentBuilder[Agent]:
        return self._set("resolver", resolver)

    def tool_providers(self, *providers: ToolProvider) -> ReactAgentBuilder[Agent]:
        """Dynamic tools, chosen before every model call from the conversation and state."""
        return self._add("tool_providers", providers)

    def system_prompt(self, text: str) -> ReactAgentBuilder[Agent]:
        return self._set("system_prompt", text)

    def instruction(self, text: str) -> ReactAgentBuilder[Agent]:
        """Instructions appended to the system prompt."""
        return self._set("instruction", text)

    def description(self, text: str) -> ReactAgentBuilder[Agent]:
        return self._set("description", text)

    def saver(self, saver: BaseCheckpointSaver) -> ReactAgentBuilder[Agent]:
        return self._set("saver", saver)

    def hooks(self, *hooks: Any) -> ReactAgentBuilder[Agent]:
        return self._add("hooks", hooks)

    def interceptors(self, *interceptors: Any) -> ReactAgentBuilder[Agent]:
        """``ModelInterceptor``s and ``ToolInterceptor``s; the first is outermost."""
        return self._add("interceptors", interceptors)

    def tool_context(self, context: Mapping[str, Any]) -> ReactAgentBuilder[Agent]:
        """Entries every tool finds in its ``ToolContext``."""
        self._options.setdefault("tool_context", {}).update(context)
        return self

    def store(self, store: Any) -> ReactAgentBuilder[Agent]:
        """Long-term memory reachable from tools as ``ToolContext.store``."""
        return self._set("store", store)

    def max_iterations(self, count: int) -> ReactAgentBuilder[Agent]:
        """Model calls allowed in one run before ``AgentMaxIterationsError``."""
        return self._set("max_iterations", count)

    def parallel_tool_execution(self, enabled: bool = True) -> ReactAgentBuilder[Agent]:
        return self._set("parallel_tool_execution", enabled)

    def output_key(self, key: str) -> ReactAgentBuilder[Agent]:
        """A state key that receives the final answer's text (with an ``output_type``: the
        validated answer)."""
        return self._set("output_key", key)

    def output_type(self, output_type: Any, strategy: str = "auto") -> ReactAgentBuilder[Agent]:
        """The type the final answer must validate as: a pydantic model, a dataclass, a
        TypedDict, or a union of them. ``strategy``: ``"tool"`` (a final-answer tool per
        variant), ``"native"`` (the provider's json_schema ``response_format``),
        ``"prompted"`` (format instructions, parsed from the text) or ``"auto"`` (``native``
        when the model declares ``supports_native_output``, else ``tool``). The answer is
        ``state["structured_response"]``; ``agent.call_structured(...)`` returns it."""
        self._set("output_type", output_type)
        return self._set("output_strategy", strategy)

    def output_strategy(self, strategy: str) -> ReactAgentBuilder[Agent]:
        """How the answer is asked for: ``"auto"``, ``"tool"``, ``"native"`` or
        ``"prompted"`` (see ``output_type``)."""
        return self._set("output_strategy", strategy)

    def output_retries(self, count: int) -> ReactAgentBuilder[Agent]:
        """How many times an invalid structured answer goes back to the model with its
        errors before ``OutputValidationError`` (default 2)."""
        return self._set("output_retries", count)

    def output_validator(self, validator: Callable[[Any], Any]) -> ReactAgentBuilder[Agent]:
        """A check of your own on the validated answer, sync or async: ``fn(value)`` returns
        the value (changed or not; ``None`` keeps it) or raises ``OutputRetry("why")`` to
        send the error back to the model; any other exception propagates. Accumulates."""
        return self._add("output_validators", (validator,))

    def output_validators(self, *validators: Callable[[Any], Any]) -> ReactAgentBuilder[Agent]:
        """``output_validator`` for several at once, run in order."""
        return self._add("output_validators", validators)

    def key_strategies(self, strategies: Mapping[str, KeyStrategyLike]) -> ReactAgentBuilder[Agent]:
        self._options.setdefault("key_strategies", {}).update(strategies)
        return self

    def unknown_tool_strategy(self, strategy: Any) -> ReactAgentBuilder[Agent]:
        return self._set("unknown_tool_strategy", strategy)

    def exception_processor(self, processor: Any) -> ReactAgentBuilder[Agent]:
        """How tool failures reach the model (``DefaultToolExecutionExceptionProcessor``)."""
        return self._set("exception_processor", processor)

    def listeners(self, *listeners: Any) -> ReactAgentBuilder[Agent]:
        """Objects with ``on_event(event)`` (and optionally an async ``aon_event``) that get
        every run event of the agent (``graph_agent.events``); one that raises is logged."""
        return self._add("listeners", listeners)

    def handoffs(self, *agents: Any) -> ReactAgentBuilder[Agent]:
        """Agents (or names of agents given elsewhere in the swarm) this agent may hand the
        conversation to, each through a ``transfer_to_<name>`` tool. The agent that took over
        answers the next turns on the thread, until it hands the conversation on or back."""
        return self._add("handoffs", agents)

    def build(self) -> Agent:
        return self._make(**self._options)
