"""``ReactAgent``: a model that calls tools in a loop, compiled into a checkpointed graph."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from checkpoint import BaseCheckpointSaver, MemorySaver

from ..errors import AgentMaxIterationsError, GraphRecursionError
from ..graph import CompiledGraph, KeyStrategyLike, RunnableConfig
from ..models import ChatModel
from ..tools import ToolCallback, ToolCallbackResolver, ToolProvider
from . import _graph
from ._agent_ref import AgentInput, ConfigLike
from ._as_tool import AgentTool
from ._build import assemble
from ._keys import JUMP_TO
from ._options import AgentOptions
from ._output import OutputSpec, structured_answer, structured_run
from .base import WITHDRAWN, BaseAgent
from .builder import ReactAgentBuilder

if TYPE_CHECKING:
    from hooks import Hook, ModelInterceptor, ToolInterceptor

__all__ = ["WITHDRAWN", "ReactAgent"]


class ReactAgent(BaseAgent):
    """An agent: a model, tools and hooks, compiled into a graph (``agent.graph``) that runs
    the ReAct loop (model -> tools -> model ... -> answer) and checkpoints every step, so a
    conversation continues on its ``thread_id`` across calls.

    Build it with ``ReactAgent.builder()...build()`` or with the same options as keywords.
    It runs like every agent (``BaseAgent``): ``call`` returns the final ``AssistantMessage``,
    ``invoke`` the whole state, ``stream`` each node's output, ``stream_events`` every run
    event (model deltas, tool calls, nodes, checkpoints) and ``stream_messages`` the answer's
    text as the model streams it; the ``a``-prefixed methods are the async twins. Sync and
    async runs use the same graph.
    """

    _fresh: Mapping[str, Any] = {JUMP_TO: None}

    def __init__(
        self,
        *,
        name: str | None = None,
        model: ChatModel | None = None,
        tools: Iterable[Any] = (),
        method_tools: Iterable[Any] = (),
        tool_callback_providers: Iterable[Any] = (),
        tool_names: Iterable[str] = (),
        resolver: ToolCallbackResolver | None = None,
        tool_providers: Iterable[ToolProvider] = (),
        system_prompt: str | None = None,
        instruction: str | None = None,
        description: str | None = None,
        saver: BaseCheckpointSaver | None = None,
        hooks: Iterable[Hook] = (),
        interceptors: Iterable[ModelInterceptor | ToolInterceptor] = (),
        tool_context: Mapping[str, Any] | None = None,
        store: Any = None,
        max_iterations: int = 25,
        parallel_tool_execution: bool = True,
        output_key: str | None = None,
        key_strategies: Mapping[str, KeyStrategyLike] | None = None,
        unknown_tool_strategy: Any = "respond",
        exception_processor: Any = None,
        listeners: Iterable[Any] = (),
        handoffs: Iterable[BaseAgent | str] = (),
        output_type: Any = None,
        output_strategy: str = "auto",
        output_retries: int = 2,
        output_validators: Iterable[Any] = (),
    ) -> None:
        # the keywords are AgentOptions' fields (tests/agent/test_options_record.py checks it)
        options = AgentOptions.of(locals())
        parts, hooks_in_order, strategies = assemble(options)
        self.name: str = parts.name
        self.description: str | None = description
        self.output_key: str | None = output_key
        self.model: ChatModel = parts.model
        self.tools: tuple[ToolCallback, ...] = parts.tools
        self.hooks: tuple[Hook, ...] = tuple(hooks_in_order)
        self.max_iterations = max_iterations
        self.saver: BaseCheckpointSaver = saver if saver is not None else MemorySaver()
        self._parts = parts
        self.output_spec: OutputSpec | None = parts.output
        """What ``output_type`` became (strategy, schema, strictness), ``None`` without one."""
        per_round, fixed = _graph.iteration_steps(self.hooks)
        limit = fixed + per_round * max_iterations
        self.handoffs: tuple[BaseAgent | str, ...] = tuple(options.handoffs)
        self._listeners = tuple(options.listeners)
        # With handoffs, the agent's own loop is a node of its swarm (made when first run:
        # an agent named in handoffs may be built after this one), which has the listeners.
        self._graph = _graph.build_graph(
            parts,
            self.hooks,
            strategies,
            self.saver,
            limit,
            () if self.handoffs else self._listeners,
        )
        self._swarm: CompiledGraph | None = None

    @property
    def graph(self) -> CompiledGraph:
        """The compiled graph the agent runs (drawable: ``agent.graph.draw_mermaid()``); with
        handoffs, its swarm: one node per agent it can reach by handoffs."""
        if not self.handoffs:
            return self._graph
        if self._swarm is None:
            from ._handoff import build_swarm

            self._swarm = build_swarm(self)
        return self._swarm

    def _agents(self) -> Mapping[str, BaseAgent]:
        agents: dict[str, BaseAgent] = {
            t.tool_definition.name: t.agent
            for t in self.tools
            if isinstance(t, AgentTool) and isinstance(t.agent, BaseAgent)
        }
        if self.handoffs:
            from ._handoff import members

            agents.update(members(self))
        return agents

    def _speaks(self, path: tuple[str, ...]) -> bool:
        """Its own model calls; with handoffs, those of the swarm's agents."""
        if not self.handoffs:
            return not path
        from ._handoff import members

        agent = members(self).get(path[0]) if path else None
        return agent is not None and agent.running.loop_speaks(path[1:])

    def _loop_speaks(self, path: tuple[str, ...]) -> bool:
        return not path

    @staticmethod
    def builder() -> ReactAgentBuilder[ReactAgent]:
        """A builder with one method per option; ``build()`` makes the agent."""
        return ReactAgentBuilder(ReactAgent)

    def __repr__(self) -> str:
        tools = [t.tool_definition.name for t in self.tools]
        return f"ReactAgent(name={self.name!r}, tools={tools}, hooks={[h.hook_name for h in self.hooks]})"

    def _raise_limit_error(self, error: GraphRecursionError, config: ConfigLike) -> NoReturn:
        """Raise ``AgentMaxIterationsError`` for the agent's step limit; ``error`` itself
        when it is one already or the caller's ``RunnableConfig.recursion_limit`` stopped
        the run (that limit replaces the agent's, so max_iterations did not)."""
        run_config = RunnableConfig.coerce(config)
        if isinstance(error, AgentMaxIterationsError) or run_config.recursion_limit is not None:
            raise error
        raise AgentMaxIterationsError(
            f"agent '{self.name}' reached max_iterations={self.max_iterations} (model calls in one "
            f"run) without a final answer on thread '{run_config.thread_id}'; raise "
            "max_iterations or check why the model keeps calling tools. The thread is kept at "
            "its last step: agent.invoke(None, config) continues it"
        ) from error

    def call_structured(self, input: AgentInput, config: ConfigLike = None) -> Any:
        """Run until the agent answers; the validated ``output_type`` value (also in
        ``state["structured_response"]``). ``OutputValidationError`` when no valid answer came
        within ``output_retries``; ``GraphUsageError`` without an ``output_type`` or when the
        run paused."""
        structured_run(self.name, self.output_spec)
        config = self._on_thread(input, config)
        try:
            outcome = self.graph.run(self._input(input), config)
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)
        thread_id = RunnableConfig.coerce(config).thread_id
        return structured_answer(self.name, outcome, self._answer(outcome, thread_id), thread_id)

    async def acall_structured(self, input: AgentInput, config: ConfigLike = None) -> Any:
        """Async ``call_structured``."""
        structured_run(self.name, self.output_spec)
        config = self._on_thread(input, config)
        run = self.graph.arun(self._input(input), config)
        del input
        try:
            outcome = await run
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)
        thread_id = RunnableConfig.coerce(config).thread_id
        return structured_answer(self.name, outcome, self._answer(outcome, thread_id), thread_id)
