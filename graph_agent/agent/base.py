"""``BaseAgent``: what every agent offers (``ReactAgent`` and the flows): running on a thread
(``call``, ``invoke``, ``stream``, ``stream_events``, ``stream_messages`` and their async
twins) and reading or editing the thread, over the one graph the agent compiles to."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from checkpoint import BaseCheckpointSaver, new_run_id

from ..errors import GraphRecursionError, GraphUsageError
from ..events import ModelDelta, ModelEnd, ModelStart, RunEnd, RunEvent
from ..graph import (
    Command,
    CompiledGraph,
    NodeOutput,
    OverAllState,
    Overwrite,
    RunnableConfig,
    RunOutcome,
    StateSnapshot,
)
from ..messages import AssistantMessage, Message
from ._parts import MESSAGES
from ._usage import run_usage

if TYPE_CHECKING:
    from ._as_tool import AgentTool

__all__ = ["WITHDRAWN", "AgentInput", "BaseAgent", "ConfigLike"]

WITHDRAWN = "\n[the model call failed; the text above is withdrawn]\n"
"""What ``stream_messages`` yields after the text of a model call that then failed (a retry
interceptor may call the model again): the text before it is not part of the answer."""

ConfigLike = RunnableConfig | Mapping[str, Any] | None
AgentInput = str | Message | Sequence[Message] | Mapping[str, Any] | Command | None


class BaseAgent:
    """An agent compiled into one graph (``agent.graph``) that checkpoints every step to
    ``agent.saver``, so a conversation continues on its ``thread_id`` across calls.

    ``call`` returns the final ``AssistantMessage``, ``invoke`` the whole state, ``stream``
    each node's output, ``stream_events`` every run event and ``stream_messages`` the
    answer's text as the model streams it; the ``a``-prefixed methods are the async twins.
    Input is a string, a message, a list of messages, a dict of state keys, ``None`` or a
    ``Command`` (to resume a paused thread).

    An agent is also a sub-agent: a flow (``SequentialAgent``, ...) runs it as a subgraph
    of its own graph; ``name``, ``description`` and ``output_key`` say who it is and where
    its answer goes.
    """

    name: str
    description: str | None
    output_key: str | None
    saver: BaseCheckpointSaver
    _graph: CompiledGraph
    # State keys every new input sets (a ReactAgent clears its pending jump), so a turn never
    # starts with the bookkeeping of the last one.
    _fresh: Mapping[str, Any] = {}

    @property
    def graph(self) -> CompiledGraph:
        """The compiled graph the agent runs (drawable: ``agent.graph.draw_mermaid()``)."""
        return self._graph

    def _raise_limit_error(self, error: GraphRecursionError, config: ConfigLike) -> NoReturn:
        """Raise what a run that hit its step limit raises (``error`` itself here)."""
        raise error

    def as_tool(
        self, name: str | None = None, description: str | None = None, *, history: bool = False
    ) -> AgentTool:
        """This agent as a tool another agent can call (``.tools(agent.as_tool())``): the
        model gives it ``{"input": "..."}`` and gets its answer back. It runs under the
        caller's namespace, in the caller's thread: its events are in the caller's
        ``stream_events``, and an interrupt inside it (a ``HumanInTheLoopHook``) pauses the
        caller, which resumes it in place. ``name`` defaults to the agent's name,
        ``description`` to its description; with ``history=True`` it also sees the caller's
        conversation (without tool traffic) before the request."""
        from ._as_tool import AgentTool

        return AgentTool(self, name, description, history)

    # -- input and output --------------------------------------------------------------------

    def _input(self, value: AgentInput) -> Mapping[str, Any] | Command | None:
        if value is None or isinstance(value, Command):
            return value
        if isinstance(value, str):
            from ..messages import UserMessage

            return {MESSAGES: [UserMessage(value)], **self._fresh}
        if hasattr(value, "message_type"):
            return {MESSAGES: [value], **self._fresh}
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
            return {**value, **self._fresh}
        if isinstance(value, (list, tuple)) and all(hasattr(m, "message_type") for m in value):
            return {MESSAGES: list(value), **self._fresh}
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
            return self.graph.invoke(self._input(input), config)
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)

    def call(self, input: AgentInput, config: ConfigLike = None) -> AssistantMessage:
        """Run until the agent answers; its final ``AssistantMessage``."""
        config = self._on_thread(input, config)
        try:
            outcome = self.graph.run(self._input(input), config)
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)
        return self._answer(outcome, RunnableConfig.coerce(config).thread_id)

    def stream(self, input: AgentInput, config: ConfigLike = None) -> Iterator[NodeOutput]:
        """Each node's output as the run goes (hooks, model, tools)."""
        config = self._on_thread(input, config)
        try:
            yield from self.graph.stream(self._input(input), config)
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)

    def stream_events(self, input: AgentInput, config: ConfigLike = None) -> Iterator[RunEvent]:
        """Every event of the run in order (``graph_agent.events``): nodes, the model's
        deltas as it streams, each tool call's start and end, checkpoints, interrupts;
        agents and graphs called from its tools with their ``namespace``. Closing the
        stream early stops the run at its next step boundary; the thread stays resumable."""
        config = self._on_thread(input, config)
        try:
            yield from self.graph.stream_events(self._input(input), config)
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
        run = self.graph.run_coroutine(self._input(input), config)
        del input
        try:
            return (await run).values
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)

    async def acall(self, input: AgentInput, config: ConfigLike = None) -> AssistantMessage:
        config = self._on_thread(input, config)
        run = self.graph.arun(self._input(input), config)
        del input  # not held while the run waits (the run keeps its own)
        try:
            outcome = await run
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)
        return self._answer(outcome, RunnableConfig.coerce(config).thread_id)

    async def astream(
        self, input: AgentInput, config: ConfigLike = None
    ) -> AsyncIterator[NodeOutput]:
        config = self._on_thread(input, config)
        try:
            async for output in self.graph.astream(self._input(input), config):
                yield output
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)

    async def astream_events(
        self, input: AgentInput, config: ConfigLike = None
    ) -> AsyncGenerator[RunEvent, None]:
        """Async ``stream_events`` (the model's ``astream``)."""
        config = self._on_thread(input, config)
        events = self.graph.astream_events(self._input(input), config)
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
        return _with_usage(self.graph.get_state(config))

    async def aget_state(self, config: ConfigLike) -> StateSnapshot | None:
        return _with_usage(await self.graph.aget_state(config))

    def get_state_history(
        self, config: ConfigLike, *, limit: int | None = None
    ) -> Iterator[StateSnapshot]:
        return self.graph.get_state_history(config, limit=limit)

    def update_state(
        self, config: ConfigLike, values: Mapping[str, Any] | None, as_node: str | None = None
    ) -> RunnableConfig:
        return self.graph.update_state(config, values, as_node)

    async def aupdate_state(
        self, config: ConfigLike, values: Mapping[str, Any] | None, as_node: str | None = None
    ) -> RunnableConfig:
        return await self.graph.aupdate_state(config, values, as_node)


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
