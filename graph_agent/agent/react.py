"""``ReactAgent``: a model that calls tools in a loop, compiled into a checkpointed graph."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from checkpoint import BaseCheckpointSaver, MemorySaver, new_run_id

from ..errors import AgentMaxIterationsError, GraphRecursionError, GraphUsageError
from ..events import ModelDelta, ModelEnd, ModelStart, NodeEnd, RunEnd, RunEvent
from ..graph import (
    Command,
    CompiledGraph,
    KeyStrategyLike,
    NodeOutput,
    OverAllState,
    Overwrite,
    RunnableConfig,
    RunOutcome,
    StateSnapshot,
)
from ..messages import AssistantMessage, Message
from ..models import ChatModel
from ..tools import ToolCallback, ToolCallbackResolver, ToolProvider
from . import _graph
from ._build import AgentSettings, assemble
from ._output import OutputSpec, rejected, structured_answer, structured_run
from ._parts import JUMP_TO, MESSAGES
from ._usage import run_usage
from .builder import ReactAgentBuilder

if TYPE_CHECKING:
    from hooks import Hook, ModelInterceptor, ToolInterceptor

__all__ = ["WITHDRAWN", "ReactAgent"]

WITHDRAWN = "\n[the model call failed; the text above is withdrawn]\n"
"""What ``stream_messages`` yields after the text of a model call that then failed (a retry
interceptor may call the model again): the text before it is not part of the answer."""

ConfigLike = RunnableConfig | Mapping[str, Any] | None
AgentInput = str | Message | Sequence[Message] | Mapping[str, Any] | Command | None


class ReactAgent:
    """An agent: a model, tools and hooks, compiled into a graph (``agent.graph``) that runs
    the ReAct loop (model -> tools -> model ... -> answer) and checkpoints every step, so a
    conversation continues on its ``thread_id`` across calls.

    Build it with ``ReactAgent.builder()...build()`` or with the same options as keywords.
    ``call`` returns the final ``AssistantMessage``, ``invoke`` the whole state, ``stream``
    each node's output, ``stream_events`` every run event (model deltas, tool calls, nodes,
    checkpoints) and ``stream_messages`` the answer's text as the model streams it; the
    ``a``-prefixed methods are the async twins. Sync and async runs use the same graph.
    """

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
        output_type: Any = None,
        output_strategy: str = "auto",
        output_retries: int = 2,
        output_validators: Iterable[Any] = (),
    ) -> None:
        settings = AgentSettings(
            name=name,
            model=model,
            tools=list(tools),
            method_tools=list(method_tools),
            tool_callback_providers=list(tool_callback_providers),
            tool_names=list(tool_names),
            resolver=resolver,
            tool_providers=list(tool_providers),
            system_prompt=system_prompt,
            instruction=instruction,
            hooks=list(hooks),
            interceptors=list(interceptors),
            tool_context=dict(tool_context or {}),
            store=store,
            max_iterations=max_iterations,
            parallel_tool_execution=parallel_tool_execution,
            output_key=output_key,
            key_strategies=dict(key_strategies or {}),
            unknown_tool_strategy=unknown_tool_strategy,
            exception_processor=exception_processor,
            listeners=list(listeners),
            output_type=output_type,
            output_strategy=output_strategy,
            output_retries=output_retries,
            output_validators=list(output_validators),
            saver=saver,
        )
        parts, hooks_in_order, strategies = assemble(settings)
        self.name: str = parts.name
        self.description = description
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
        self._graph = _graph.build_graph(
            parts, self.hooks, strategies, self.saver, limit, tuple(settings.listeners)
        )

    @staticmethod
    def builder() -> ReactAgentBuilder[ReactAgent]:
        """A builder with one method per option; ``build()`` makes the agent."""
        return ReactAgentBuilder(ReactAgent)

    def __repr__(self) -> str:
        tools = [t.tool_definition.name for t in self.tools]
        return f"ReactAgent(name={self.name!r}, tools={tools}, hooks={[h.hook_name for h in self.hooks]})"

    @property
    def graph(self) -> CompiledGraph:
        """The compiled graph the agent runs (drawable: ``agent.graph.draw_mermaid()``)."""
        return self._graph

    # -- input and output --------------------------------------------------------------------

    def _input(self, value: AgentInput) -> Mapping[str, Any] | Command | None:
        if value is None or isinstance(value, Command):
            return value
        if isinstance(value, str):
            from ..messages import UserMessage

            return {MESSAGES: [UserMessage(value)], JUMP_TO: None}
        if hasattr(value, "message_type"):
            return {MESSAGES: [value], JUMP_TO: None}
        if isinstance(value, Mapping):
            given = value.get(MESSAGES)
            given = given.value if isinstance(given, Overwrite) else given
            items = given if isinstance(given, (list, tuple)) else [given]
            bad = [m for m in items if m is not None and not hasattr(m, "message_type")]
            if bad:
                raise GraphUsageError(
                    f"agent '{self.name}': state['messages'] takes messages (UserMessage(...), "
                    f"...), got {type(bad[0]).__name__} {bad[0]!r}"
                )
            return {**value, JUMP_TO: None}
        if isinstance(value, (list, tuple)) and all(hasattr(m, "message_type") for m in value):
            return {MESSAGES: list(value), JUMP_TO: None}
        raise GraphUsageError(
            f"agent '{self.name}' takes a string, a message, a list of messages, a dict of state "
            f"keys, None (resume) or Command(...), got {type(value).__name__}"
        )

    def _answer(self, outcome: RunOutcome, thread_id: str) -> AssistantMessage:
        """The run's final answer; a clear error when the run paused before it finished
        (otherwise an earlier turn's answer, or the message asking for tools, would pass for
        it)."""
        state = outcome.values
        if outcome.next:
            pending = [i.value for i in outcome.interrupts]
            raise GraphUsageError(
                f"agent '{self.name}' paused on thread '{thread_id}' before answering "
                f"(next: {list(outcome.next)}, interrupts: {pending!r}); resume it with "
                "agent.call(Command(resume=...), config), or run it with agent.invoke and "
                "read agent.get_state(config).interrupts"
            )
        for message in reversed(state.get(MESSAGES) or ()):
            if isinstance(message, AssistantMessage):
                return message
        raise GraphUsageError(
            f"agent '{self.name}' has no answer yet on this thread: the run stopped before the "
            "model answered (get_state(config).interrupts says why)"
        )

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

    def _on_thread(self, input: AgentInput, config: ConfigLike) -> ConfigLike:
        """The run's config. Without a thread id the run gets a fresh thread of its own, so
        it never sees another call's history; resuming (``None`` or ``Command``) needs the
        paused run's thread id."""
        if isinstance(config, RunnableConfig) or (
            isinstance(config, Mapping) and "thread_id" in config
        ):
            return config
        if input is None or isinstance(input, Command):
            raise GraphUsageError(
                f"agent '{self.name}': resuming (input None or Command) needs the paused run's "
                "thread: pass config={'thread_id': ...}, the id the paused run was given"
            )
        fresh = f"{self.name}-{new_run_id()}"
        return {**config, "thread_id": fresh} if config else {"thread_id": fresh}

    # -- running -----------------------------------------------------------------------------

    def invoke(self, input: AgentInput, config: ConfigLike = None) -> OverAllState:
        """Run until the agent answers (or pauses); the thread's state afterwards."""
        config = self._on_thread(input, config)
        try:
            return self._graph.invoke(self._input(input), config)
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)

    def call(self, input: AgentInput, config: ConfigLike = None) -> AssistantMessage:
        """Run until the agent answers; its final ``AssistantMessage``."""
        config = self._on_thread(input, config)
        try:
            outcome = self._graph.run(self._input(input), config)
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)
        return self._answer(outcome, RunnableConfig.coerce(config).thread_id)

    def stream(self, input: AgentInput, config: ConfigLike = None) -> Iterator[NodeOutput]:
        """Each node's output as the run goes (hooks, model, tools)."""
        config = self._on_thread(input, config)
        try:
            yield from self._graph.stream(self._input(input), config)
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)

    def stream_events(self, input: AgentInput, config: ConfigLike = None) -> Iterator[RunEvent]:
        """Every event of the run in order (``graph_agent.events``): nodes, the model's
        deltas as it streams, each tool call's start and end, checkpoints, interrupts;
        agents and graphs called from its tools with their ``namespace``. Closing the
        stream early stops the run at its next step boundary; the thread stays resumable."""
        config = self._on_thread(input, config)
        try:
            yield from self._graph.stream_events(self._input(input), config)
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)

    def stream_messages(self, input: AgentInput, config: ConfigLike = None) -> Iterator[str]:
        """The answer's text as the model streams it, across every model call of the run
        (a view of ``stream_events``: this agent's own ``model_delta`` texts, then the final
        answer when the model did not write it, e.g. a return-direct tool's result)."""
        text = _TextView()
        for event in self.stream_events(input, config):
            piece = text.see(event)
            if piece:
                yield piece

    async def ainvoke(self, input: AgentInput, config: ConfigLike = None) -> OverAllState:
        """Async ``invoke``: the model's ``acall``, tools' ``acall``; sync hooks in threads."""
        config = self._on_thread(input, config)
        # the graph's run itself, not its ainvoke: one coroutine less per waiting run; the
        # run keeps its own input, so the caller's is not held while the run waits
        run = self._graph.run_coroutine(self._input(input), config)
        del input
        try:
            return (await run).values
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)

    async def acall(self, input: AgentInput, config: ConfigLike = None) -> AssistantMessage:
        config = self._on_thread(input, config)
        run = self._graph.arun(self._input(input), config)
        del input  # not held while the run waits (the run keeps its own)
        try:
            outcome = await run
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)
        return self._answer(outcome, RunnableConfig.coerce(config).thread_id)

    def call_structured(self, input: AgentInput, config: ConfigLike = None) -> Any:
        """Run until the agent answers; the validated ``output_type`` value (also in
        ``state["structured_response"]``). ``OutputValidationError`` when no valid answer came
        within ``output_retries``; ``GraphUsageError`` without an ``output_type`` or when the
        run paused."""
        structured_run(self.name, self.output_spec)
        config = self._on_thread(input, config)
        try:
            outcome = self._graph.run(self._input(input), config)
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)
        thread_id = RunnableConfig.coerce(config).thread_id
        return structured_answer(self.name, outcome, self._answer(outcome, thread_id), thread_id)

    async def acall_structured(self, input: AgentInput, config: ConfigLike = None) -> Any:
        """Async ``call_structured``."""
        structured_run(self.name, self.output_spec)
        config = self._on_thread(input, config)
        run = self._graph.arun(self._input(input), config)
        del input
        try:
            outcome = await run
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)
        thread_id = RunnableConfig.coerce(config).thread_id
        return structured_answer(self.name, outcome, self._answer(outcome, thread_id), thread_id)

    async def astream(
        self, input: AgentInput, config: ConfigLike = None
    ) -> AsyncIterator[NodeOutput]:
        config = self._on_thread(input, config)
        try:
            async for output in self._graph.astream(self._input(input), config):
                yield output
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)

    async def astream_events(
        self, input: AgentInput, config: ConfigLike = None
    ) -> AsyncGenerator[RunEvent, None]:
        """Async ``stream_events`` (the model's ``astream``)."""
        config = self._on_thread(input, config)
        events = self._graph.astream_events(self._input(input), config)
        try:
            async for event in events:
                yield event
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)
        finally:  # closed early, the graph's stream stops its run now, not when collected
            await events.aclose()  # type: ignore[attr-defined]

    async def astream_messages(
        self, input: AgentInput, config: ConfigLike = None
    ) -> AsyncIterator[str]:
        """Async ``stream_messages``."""
        text = _TextView()
        events = self.astream_events(input, config)
        try:
            async for event in events:
                piece = text.see(event)
                if piece:
                    yield piece
        finally:
            await events.aclose()

    # -- threads -----------------------------------------------------------------------------

    def get_state(self, config: ConfigLike) -> StateSnapshot | None:
        """The thread's latest snapshot; ``metadata["usage"]`` totals the tokens of its latest
        run (each model answer keeps its own in ``message.metadata["usage"]``)."""
        return _with_usage(self._graph.get_state(config))

    async def aget_state(self, config: ConfigLike) -> StateSnapshot | None:
        return _with_usage(await self._graph.aget_state(config))

    def get_state_history(
        self, config: ConfigLike, *, limit: int | None = None
    ) -> Iterator[StateSnapshot]:
        return self._graph.get_state_history(config, limit=limit)

    def update_state(
        self, config: ConfigLike, values: Mapping[str, Any] | None, as_node: str | None = None
    ) -> RunnableConfig:
        return self._graph.update_state(config, values, as_node)

    async def aupdate_state(
        self, config: ConfigLike, values: Mapping[str, Any] | None, as_node: str | None = None
    ) -> RunnableConfig:
        return await self._graph.aupdate_state(config, values, as_node)


class _TextView:
    """Turns run events into the answer's text: the deltas of this agent's own model calls
    (namespace ``()``; an agent called from a tool streams into its own events only), and
    the final answer when no model call streamed it."""

    __slots__ = ("streamed",)

    def __init__(self) -> None:
        self.streamed = ""  # the text of the latest model call

    def see(self, event: RunEvent) -> str:
        if event.namespace:
            return ""
        if isinstance(event, ModelStart):
            self.streamed = ""
        elif isinstance(event, ModelDelta):
            self.streamed += event.text
            return event.text
        elif isinstance(event, ModelEnd) and event.error is not None and self.streamed:
            self.streamed = ""
            return WITHDRAWN  # what this failed call streamed is not part of the answer
        elif isinstance(event, NodeEnd) and self.streamed and rejected(event.update):
            self.streamed = ""
            return WITHDRAWN  # an answer the output_type sent back is not the answer
        elif isinstance(event, RunEnd) and not event.interrupts:
            messages = event.values.get(MESSAGES) or ()
            last = messages[-1] if messages else None
            if isinstance(last, AssistantMessage) and last.answer and last.answer != self.streamed:
                return last.answer
        return ""


def _with_usage(snapshot: StateSnapshot | None) -> StateSnapshot | None:
    if snapshot is None:
        return None
    usage = run_usage(snapshot.values.get(MESSAGES))
    return dataclasses.replace(snapshot, metadata={**snapshot.metadata, "usage": usage})
