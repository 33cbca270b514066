"""``BaseAgent``: what every agent offers (``ReactAgent`` and the flows): running on a thread
(``call``, ``invoke``, ``stream``, ``stream_events``, ``stream_messages`` and their async
twins) and reading or editing the thread, over the one graph the agent compiles to."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from typing import Any, NoReturn

from checkpoint import BaseCheckpointSaver, new_run_id

from ..errors import GraphRecursionError, GraphUsageError
from ..events import ModelDelta, ModelEnd, ModelStart, NodeEnd, RunEnd, RunEvent
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
from ..messages import AssistantMessage
from ._agent_ref import AgentInput, ConfigLike
from ._as_tool import AgentTool
from ._keys import MESSAGES
from ._output import rejected
from ._usage import run_usage

__all__ = ["WITHDRAWN", "BaseAgent", "RunningAgent"]

WITHDRAWN = "\n[the model call failed; the text above is withdrawn]\n"
"""What ``stream_messages`` yields after the text of a model call that then failed (a retry
interceptor may call the model again): the text before it is not part of the answer."""


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
    _listeners: tuple[Any, ...]  # the listeners it was given (with handoffs, its swarm's)
    # State keys every new input sets (a ReactAgent clears its pending jump), so a turn never
    # starts with the bookkeeping of the last one.
    _fresh: Mapping[str, Any] = {}
    # Whether the answer is composed of sub-agents' answers (stream_messages then adds the
    # final answer only when none of them streamed).
    _composed = False

    @property
    def graph(self) -> CompiledGraph:
        """The compiled graph the agent runs (drawable: ``agent.graph.draw_mermaid()``)."""
        return self._graph

    @property
    def running(self) -> RunningAgent:
        """The agent as a part of something else runs it (a flow's step, a tool, a swarm's
        member): what ``RunningAgent`` offers. Not needed to use an agent."""
        return RunningAgent(self)

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

    def stream_events(
        self, input: AgentInput, config: ConfigLike = None, *, agent: str | None = None
    ) -> Iterator[RunEvent]:
        """Every event of the run in order (``graph_agent.events``): nodes, the model's
        deltas as it streams, each tool call's start and end, checkpoints, interrupts;
        sub-agents, and agents and graphs called from its tools, with their ``namespace``.
        ``agent="writer"`` narrows the stream to the events of that sub-agent (at any depth)
        and what runs inside it. Closing the stream early stops the run at its next step
        boundary; the thread stays resumable. An ``agent`` this agent does not run is refused
        here, before the run starts."""
        keep = self._narrowed(agent) if agent is not None else None
        return self._stream_events(input, config, keep)

    def _stream_events(
        self, input: AgentInput, config: ConfigLike, keep: Callable[[RunEvent], bool] | None
    ) -> Iterator[RunEvent]:
        config = self._on_thread(input, config)
        try:
            for event in self.graph.stream_events(self._input(input), config):
                if keep is None or keep(event):
                    yield event
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)

    def stream_messages(
        self, input: AgentInput, config: ConfigLike = None, *, agent: str | None = None
    ) -> Iterator[str]:
        """The answer's text as the model streams it, across every model call of the run
        (a view of ``stream_events``). For a ``ReactAgent``: its own ``model_delta`` texts,
        then the final answer when the model did not write it (a return-direct tool's
        result). For a flow: the texts of the sub-agents whose answers join its
        conversation. ``agent="writer"`` narrows it to that sub-agent's answer."""
        return self._stream_messages(input, config, self._text_view(agent))

    def _stream_messages(
        self, input: AgentInput, config: ConfigLike, text: _TextView
    ) -> Iterator[str]:
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

    def astream_events(
        self, input: AgentInput, config: ConfigLike = None, *, agent: str | None = None
    ) -> AsyncGenerator[RunEvent, None]:
        """Async ``stream_events`` (the model's ``astream``)."""
        keep = self._narrowed(agent) if agent is not None else None
        return self._astream_events(input, config, keep)

    async def _astream_events(
        self, input: AgentInput, config: ConfigLike, keep: Callable[[RunEvent], bool] | None
    ) -> AsyncGenerator[RunEvent, None]:
        config = self._on_thread(input, config)
        events = self.graph.astream_events(self._input(input), config)
        try:
            async for event in events:
                if keep is None or keep(event):
                    try:
                        yield event
                    except asyncio.CancelledError:
                        # its reader was cancelled: so is the run, at once
                        await events.athrow(asyncio.CancelledError())  # type: ignore[attr-defined]
                        raise
        except GraphRecursionError as error:
            self._raise_limit_error(error, config)
        finally:  # closed early, the graph's stream stops its run now, not when collected
            await events.aclose()  # type: ignore[attr-defined]

    def astream_messages(
        self, input: AgentInput, config: ConfigLike = None, *, agent: str | None = None
    ) -> AsyncGenerator[str, None]:
        """Async ``stream_messages``."""
        return self._astream_messages(input, config, self._text_view(agent))

    async def _astream_messages(
        self, input: AgentInput, config: ConfigLike, text: _TextView
    ) -> AsyncGenerator[str, None]:
        events = self.astream_events(input, config)
        try:
            async for event in events:
                piece = text.see(event)
                if piece:
                    yield piece
        finally:
            await events.aclose()

    # -- who speaks: the sub-agents, and whose text is the answer --------------------------

    def _agents(self) -> Mapping[str, BaseAgent]:
        """The agents this one runs, by the name their namespace part carries."""
        return {}

    def _speaks(self, path: tuple[str, ...]) -> bool:
        """Whether a model call at ``path`` (namespace parts' names, relative to this
        agent's graph) writes text of the agent's answer."""
        return not path

    def _loop_speaks(self, path: tuple[str, ...]) -> bool:
        """``_speaks`` for the agent's own loop (a swarm runs its members' loops)."""
        return self._speaks(path)

    def _find(self, name: str) -> BaseAgent:
        seen: dict[str, BaseAgent] = {}
        todo = [self]
        while todo:
            agent = todo.pop(0)
            for key, sub in agent._agents().items():
                if key == name:
                    return sub
                if key not in seen:
                    seen[key] = sub
                    todo.append(sub)
        raise GraphUsageError(
            f"agent '{self.name}' runs no agent named '{name}' (it runs: "
            f"{', '.join(sorted(seen)) or 'none'})"
        )

    def _narrowed(self, name: str) -> Callable[[RunEvent], bool]:
        self._find(name)
        return lambda event: name in _path(event.namespace)

    def _text_view(self, name: str | None) -> _TextView:
        if name is None:
            return _TextView(self._speaks, whole_answer=True, if_silent=self._composed)
        found = self._find(name)

        def speaks(path: tuple[str, ...]) -> bool:
            if name not in path:
                return False
            rest = path[path.index(name) + 1 :]
            return found._speaks(rest) or found._loop_speaks(rest)

        return _TextView(speaks, whole_answer=False)

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

    def aget_state_history(
        self, config: ConfigLike, *, limit: int | None = None
    ) -> AsyncIterator[StateSnapshot]:
        """Async ``get_state_history``."""
        return self.graph.aget_state_history(config, limit=limit)

    def update_state(
        self, config: ConfigLike, values: Mapping[str, Any] | None, as_node: str | None = None
    ) -> RunnableConfig:
        return self.graph.update_state(config, values, as_node)

    async def aupdate_state(
        self, config: ConfigLike, values: Mapping[str, Any] | None, as_node: str | None = None
    ) -> RunnableConfig:
        return await self.graph.aupdate_state(config, values, as_node)


class RunningAgent:
    """What composition (flows, ``as_tool``, swarms) asks of an agent it runs: how a run of
    it starts (its thread, its input) and ends (its answer, its step limit), which model
    calls speak for it, and its own loop. Each kind of agent decides the answers (``BaseAgent``
    and its subclasses); the modules that compose agents ask only here."""

    __slots__ = ("agent",)

    def __init__(self, agent: BaseAgent) -> None:
        self.agent = agent

    def config(self, input: AgentInput, config: ConfigLike) -> ConfigLike:
        """The run's config: ``config``, or a fresh thread of the agent's own when it names
        none (a resume, ``None`` or ``Command``, needs one: a clear error otherwise)."""
        return self.agent._on_thread(input, config)

    def input(self, value: AgentInput) -> Mapping[str, Any] | Command | None:
        """What the agent's graph takes for ``value`` (a string, message(s), state keys,
        ``None`` or ``Command``), with the keys every new input sets; a clear error for
        anything else."""
        return self.agent._input(value)

    def answer(self, outcome: RunOutcome, thread_id: str) -> AssistantMessage:
        """The run's final answer; a clear error when the run paused or stopped before it."""
        return self.agent._answer(outcome, thread_id)

    def raise_limit_error(self, error: GraphRecursionError, config: ConfigLike) -> NoReturn:
        """Raise what a run of the agent that hit its step limit raises."""
        self.agent._raise_limit_error(error, config)

    def speaks(self, path: tuple[str, ...]) -> bool:
        """Whether a model call at ``path`` (namespace parts' names, relative to the agent's
        graph) writes text of the agent's answer."""
        return self.agent._speaks(path)

    def loop_speaks(self, path: tuple[str, ...]) -> bool:
        """``speaks`` for the agent's own loop, not its swarm (a swarm runs its members'
        loops, each a node of the swarm)."""
        return self.agent._loop_speaks(path)

    @property
    def fresh(self) -> Mapping[str, Any]:
        """The state keys every new input sets (the last turn's bookkeeping cleared)."""
        return self.agent._fresh

    @property
    def loop(self) -> CompiledGraph:
        """The agent's own graph: ``agent.graph``, unless the agent has handoffs (then that is
        its swarm, and this its own loop, a node of the swarm)."""
        return self.agent._graph

    @property
    def listeners(self) -> tuple[Any, ...]:
        """The listeners the agent was given (with handoffs, its swarm holds them, not its
        loop)."""
        return self.agent._listeners


def _path(namespace: tuple[str, ...]) -> tuple[str, ...]:
    """The names in a namespace (each part is ``"<node or tool>:<id>"``)."""
    return tuple(part.partition(":")[0] for part in namespace)


class _TextView:
    """Turns run events into the answer's text: the deltas of the model calls whose
    namespace ``speaks`` (an agent's own; an agent called from a tool streams into the
    events only), and, with ``whole_answer``, the run's final answer when no model call
    streamed it (a return-direct tool's result).

    One speaker streams at a time: while one model call streams, what others (a parallel
    flow's sub-agents) stream meanwhile is held, and follows as a paragraph of its own when
    the first call ends, so parallel answers never interleave word by word."""

    __slots__ = (
        "done",
        "held",
        "if_silent",
        "latest",
        "live",
        "speaker",
        "speaks",
        "spoke",
        "streamed",
        "whole_answer",
    )

    def __init__(
        self,
        speaks: Callable[[tuple[str, ...]], bool],
        whole_answer: bool,
        if_silent: bool = False,
    ) -> None:
        self.speaks = speaks
        self.whole_answer = whole_answer
        self.if_silent = if_silent  # the final answer only when no model call spoke
        self.spoke = False
        self.speaker: tuple[str, ...] = ()  # the namespace of the latest text
        self.streamed: dict[tuple[str, ...], str] = {}  # the latest model call's, by namespace
        self.latest = ""  # the text of the latest model call that spoke
        self.live: tuple[str, ...] | None = None  # the namespace streaming to the reader now
        self.held: dict[tuple[str, ...], list[str]] = {}  # what others streamed meanwhile
        self.done: set[tuple[str, ...]] = set()  # held speakers whose model call ended

    def see(self, event: RunEvent) -> str:
        namespace = event.namespace
        if isinstance(event, RunEnd):
            if namespace:
                return self._unstreamed(event)
            held = self._flush(everything=True)
            if not self.whole_answer or event.interrupts:
                return held
            if self.if_silent and self.spoke:
                return held
            messages = event.values.get(MESSAGES) or ()
            last = messages[-1] if messages else None
            if isinstance(last, AssistantMessage) and last.answer and last.answer != self.latest:
                return held + last.answer
            return held
        if not isinstance(event, (ModelStart, ModelDelta, ModelEnd, NodeEnd)):
            return ""
        if not self.speaks(_path(namespace) if namespace else ()):
            return ""
        if isinstance(event, NodeEnd):
            if self.streamed.get(namespace) and rejected(event.update):
                self.streamed[namespace] = self.latest = ""
                return WITHDRAWN  # an answer the output_type sent back is not the answer
            return ""
        if isinstance(event, ModelStart):
            self.streamed[namespace] = self.latest = ""
            self.done.discard(namespace)
        elif isinstance(event, ModelDelta):
            text = event.text
            if not text:
                return ""
            self.latest = self.streamed[namespace] = self.streamed.get(namespace, "") + text
            return self._say(namespace, text)
        elif namespace != self.live:  # a held speaker's call ended
            if event.error is not None:
                self.held.pop(namespace, None)  # never shown: nothing to withdraw
            elif namespace in self.held:
                self.done.add(namespace)
        else:
            self.live = None
            withdrawn = ""
            if event.error is not None and self.streamed.get(namespace):
                self.streamed[namespace] = self.latest = ""
                withdrawn = WITHDRAWN  # what this failed call streamed is not the answer
            return withdrawn + self._flush()
        return ""

    def _say(self, namespace: tuple[str, ...], text: str, whole: bool = False) -> str:
        """``text`` of ``namespace`` for the reader now, or held while another speaks
        (``whole``: the speaker's complete answer)."""
        if self.live is not None and self.live != namespace:
            self.held.setdefault(namespace, []).append(text)
            if whole:
                self.done.add(namespace)
            return ""
        if not whole:
            self.live = namespace
        return self._emit(namespace, text)

    def _emit(self, namespace: tuple[str, ...], text: str) -> str:
        if self.spoke and namespace != self.speaker:
            text = "\n\n" + text  # another agent's answer: a paragraph of its own
        self.spoke, self.speaker = True, namespace
        return text

    def _flush(self, everything: bool = False) -> str:
        """What held speakers said, in the order they began; the first still streaming
        becomes the live speaker (unless ``everything``: the run is over)."""
        out = ""
        while self.held:
            namespace = next(iter(self.held))
            out += self._emit(namespace, "".join(self.held.pop(namespace)))
            if namespace in self.done or everything:
                self.done.discard(namespace)
                continue
            self.live = namespace
            break
        return out

    def _unstreamed(self, event: RunEnd) -> str:
        """A speaking sub-agent's answer that no model call of it streamed (a return-direct
        tool's result): it is part of the answer all the same."""
        namespace = event.namespace
        if event.interrupts or not self.speaks(_path(namespace)):
            return ""
        messages = event.values.get(MESSAGES) or ()
        last = messages[-1] if messages else None
        if not isinstance(last, AssistantMessage) or last.tool_calls or not last.answer:
            return ""
        if last.answer == self.streamed.get(namespace, ""):
            return ""
        self.latest = self.streamed[namespace] = last.answer
        return self._say(namespace, last.answer, whole=True)


def _with_usage(snapshot: StateSnapshot | None) -> StateSnapshot | None:
    if snapshot is None:
        return None
    usage = run_usage(snapshot.values.get(MESSAGES))
    return dataclasses.replace(snapshot, metadata={**snapshot.metadata, "usage": usage})
