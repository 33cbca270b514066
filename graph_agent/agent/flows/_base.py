"""What every flow shares: its options (``FlowOptions``), their checks, and the graph it compiles to (one
thread, sub-agents as subgraphs under namespaces, one checkpoint chain)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from checkpoint import BaseCheckpointSaver, MemorySaver

from ...errors import AgentBuildError
from ...graph import (
    END,
    START,
    CompiledGraph,
    KeyStrategy,
    KeyStrategyLike,
    OverAllState,
    StateGraph,
)
from ...messages import AssistantMessage
from ...models import ChatModel
from .._keys import MESSAGES
from .._option_methods import FlowOptionMethods
from .._option_record import add_option_methods
from .._subagent import ACTIVE_AGENTS, NAME, RESULTS, Shape, SubAgentNode, with_usage
from .._unanswered import answer_unfinished_calls
from ..base import BaseAgent
from ._options import FlowOptions

__all__ = ["FlowAgent", "FlowAgentBuilder"]


def _merge_results(old: Any, new: Any) -> Any:
    """The ``results`` key: answers by agent name, merged; ``{}`` empties it."""
    if not new:
        return {}
    return {**(old or {}), **new}


def _merge_active(old: Any, new: Any) -> Any:
    """The ``active_agents`` key: each swarm's active agent, by the swarm's name."""
    return {**(old or {}), **(new or {})}


class FlowAgent(BaseAgent):
    """A flow of sub-agents (``SequentialAgent``, ``ParallelAgent``, ``LoopAgent``,
    ``LlmRoutingAgent``, ``SupervisorAgent``): it runs like any agent (``call``, ``invoke``,
    ``stream_events``, async twins, on a thread, resumable) and is itself a sub-agent of
    other flows. Its sub-agents run as subgraphs of its graph: their checkpoints live in the
    flow's thread under their namespace, their events reach the flow's stream with it, and an
    interrupt in any of them pauses the whole flow, which resumes it in place.

    The flow's conversation (``messages``) holds the user's input and each sub-agent's final
    answer; a sub-agent's own model calls and tools stay in its checkpoints. A sub-agent's
    ``output_key`` hands its answer (text, or the validated object of an ``output_type``) on
    to later sub-agents, whose ``instruction`` may name it (``{plan}``).
    """

    kind = "flow"
    # Whether the sub-agents write into the flow's state (a supervisor's answer it as tools)
    _shares_state = True
    _composed = True
    # Names of the flow's graph nodes that are not sub-agents: no sub-agent may take one.
    _own_nodes: tuple[str, ...] = (START, END)

    def __init__(
        self,
        *,
        name: str | None = None,
        sub_agents: Iterable[BaseAgent] = (),
        description: str | None = None,
        saver: BaseCheckpointSaver | None = None,
        listeners: Iterable[Any] = (),
        output_key: str | None = None,
        **options: Any,
    ) -> None:
        # the keywords are FlowOptions' options of every flow, ``options`` a flow's own
        # (tests/agent/test_flow_options.py checks the signature against the record)
        given = FlowOptions.of(type(self), {**locals(), **options})
        problems: list[str] = []
        self.name = given.name or ""
        self.description = given.description
        self.output_key = given.output_key
        self.sub_agents: tuple[BaseAgent, ...] = tuple(given.sub_agents)
        self.saver = given.saver if given.saver is not None else MemorySaver()
        self._listeners = tuple(given.listeners)
        self._check_common(problems)
        self._configure(given, problems)
        unknown = FlowOptions.unknown(type(self), options)
        if unknown:
            problems.append(f"unknown option(s) {unknown} for a {type(self).__name__}")
        if problems:
            raise AgentBuildError(name, problems)
        self._graph = self._compile()

    def __repr__(self) -> str:
        names = [a.name for a in self.sub_agents]
        return f"{type(self).__name__}(name={self.name!r}, sub_agents={names})"

    # -- what each flow says -----------------------------------------------------------------

    def _model_option(self, options: FlowOptions, problems: list[str], role: str) -> Any:
        """The ``model`` option of a flow whose model chooses (a router, a supervisor)."""
        model = options.model
        if model is None:
            problems.append(f"no model: the {role} needs one to choose, e.g. .model(model)")
        elif not isinstance(model, ChatModel):
            problems.append(f"model {model!r} is not a ChatModel (call, stream, acall, astream)")
        return model

    def _check_descriptions(self, problems: list[str], reader: str) -> None:
        """Every sub-agent has a description: ``reader`` (a model) chooses by it."""
        for agent in self.sub_agents:
            if isinstance(agent, BaseAgent) and not agent.description:
                problems.append(
                    f"sub-agent '{agent.name}' has no description: {reader} chooses by it; add "
                    ".description('what it does')"
                )

    def _count_option(self, options: FlowOptions, problems: list[str], name: str) -> int:
        """A positive int option (``max_iterations``); its default when wrong."""
        count = getattr(options, name)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            problems.append(f"{name} must be a positive int, got {count!r}")
            default: int = FlowOptions.default(name)
            return default
        return count

    def _configure(self, options: FlowOptions, problems: list[str]) -> None:
        """Check this flow's own options in ``options`` and keep them."""

    def _compile(self) -> CompiledGraph:
        """The flow's graph, with its saver and listeners."""
        graph = StateGraph(self._strategies(), private_keys=self._private_keys())
        limit = self._build(graph)
        return graph.compile(
            saver=self.saver,
            recursion_limit=limit,
            listeners=self._listeners,
            name=self.name,
            before_input=answer_unfinished_calls,
        )

    def _build(self, graph: StateGraph) -> int:
        """Add the flow's nodes and edges; the run's step limit."""
        raise NotImplementedError

    def _private_keys(self) -> tuple[str, ...]:
        return (RESULTS,)

    def _agents(self) -> Mapping[str, BaseAgent]:
        return {a.name: a for a in self.sub_agents}

    def _speaks(self, path: tuple[str, ...]) -> bool:
        """Its sub-agents' answers make its conversation."""
        if not path:
            return False
        agent = self._agents().get(path[0])
        return agent is not None and agent.running.speaks(path[1:])

    # -- shared ------------------------------------------------------------------------------

    def _check_common(self, problems: list[str]) -> None:
        if not self.name or not isinstance(self.name, str):
            problems.append("no name: give the flow one, e.g. .name('research_team')")
        elif not NAME.match(self.name):
            problems.append(
                f"name {self.name!r} must be 1-64 letters, digits, '_' or '-' (it names the "
                "flow's tools and namespaces)"
            )
        if not self.sub_agents:
            problems.append("no sub-agents: add them with .sub_agents(agent, ...)")
        seen: set[str] = set()
        keys: dict[str, str] = {}
        for agent in self.sub_agents:
            if not isinstance(agent, BaseAgent):
                problems.append(
                    f"sub-agent {agent!r} is not an agent (a ReactAgent or another flow)"
                )
                continue
            if agent.name in seen:
                problems.append(f"two sub-agents are named '{agent.name}'; names must be unique")
            seen.add(agent.name)
            if not NAME.match(agent.name):
                problems.append(
                    f"sub-agent name {agent.name!r} must be 1-64 letters, digits, '_' or '-'"
                )
            elif agent.name in self._own_nodes:
                problems.append(
                    f"sub-agent name '{agent.name}' names a node of the "
                    f"{type(self).__name__} itself; rename the sub-agent"
                )
            if agent.output_key and self._shares_state:
                if agent.output_key in keys:
                    problems.append(
                        f"sub-agents '{keys[agent.output_key]}' and '{agent.name}' both write "
                        f"output_key '{agent.output_key}'; give each its own"
                    )
                keys[agent.output_key] = agent.name
        self._check_strategies(problems)
        if self.output_key in (MESSAGES, RESULTS):
            problems.append(f"output_key '{self.output_key}' is a key the flow already uses")

    def _check_strategies(self, problems: list[str]) -> None:
        """A key two sub-agents merge differently (one appends, one merges) cannot be one
        key of the flow: the flow's value would not fit the other's strategy."""
        declared: dict[str, tuple[str, KeyStrategyLike]] = {}
        for agent in self.sub_agents:
            if not isinstance(agent, BaseAgent):
                continue
            graph = agent.graph
            for key, strategy in graph.key_strategies.items():
                if key in graph.private_keys or key in (MESSAGES, RESULTS):
                    continue
                first = declared.setdefault(key, (agent.name, strategy))
                if first[1] != strategy:
                    problems.append(
                        f"sub-agents '{first[0]}' and '{agent.name}' merge key '{key}' "
                        f"differently ({_strategy_name(first[1])} and "
                        f"{_strategy_name(strategy)}); give them one strategy for it"
                    )

    def _strategies(self) -> dict[str, KeyStrategyLike]:
        """``messages`` appends; a key a sub-agent declares a strategy for merges that way in
        the flow too (a clash names both)."""
        strategies: dict[str, KeyStrategyLike] = {
            MESSAGES: KeyStrategy.APPEND,
            RESULTS: _merge_results,
            ACTIVE_AGENTS: _merge_active,
        }
        for agent in self.sub_agents:
            graph = agent.graph
            for key, strategy in graph.key_strategies.items():
                if key in graph.private_keys or key in strategies:
                    continue
                strategies[key] = strategy
        return strategies

    def _node(
        self, agent: BaseAgent, shape: Shape = Shape.ANSWER, *, last: bool = False
    ) -> SubAgentNode:
        """``last``: the sub-agent whose result is the flow's (its ``output_key``)."""
        key = self.output_key if last else None
        return SubAgentNode(agent, shape, hidden=self._private_keys(), result_key=key)

    def _merge_node(
        self,
        agents: Sequence[BaseAgent],
        merge: Callable[[dict[str, Any]], Any] | None = None,
        usage_of: Callable[[OverAllState], Any] | None = None,
        order: Callable[[OverAllState], Sequence[str]] | None = None,
    ) -> Callable[[OverAllState], dict[str, Any]]:
        """The node after a step that ran ``agents`` at once: their answers, in the order
        given (or the names ``order(state)`` gives first), as one message (one agent's answer
        as it is: no second model call repeats it) carrying the usage of them all (and
        ``usage_of(state)``: a router's), and ``merge``'s value under the flow's
        ``output_key``."""
        names = [a.name for a in agents]
        by_name = {a.name: a for a in agents}
        output_key = self.output_key

        def merge_answers(state: OverAllState) -> dict[str, Any]:
            results = state.get(RESULTS) or {}
            first = [n for n in order(state) if n in by_name] if order is not None else []
            ranked = list(dict.fromkeys([*first, *names]))
            answers = {n: results[n] for n in ranked if n in results}
            update: dict[str, Any] = {RESULTS: {}}
            given = [m for m in answers.values() if m is not None]
            extra = usage_of(state) if usage_of is not None else None
            if len(given) == 1:
                update[MESSAGES] = [with_usage(given[0], given, extra)]
            elif given:
                text = "\n\n".join(f"{n}:\n{m.text}" for n, m in answers.items() if m is not None)
                update[MESSAGES] = [with_usage(AssistantMessage(text), given, extra)]
            if output_key:
                values = {n: _value_of(state, by_name[n], answers[n]) for n in answers}
                update[output_key] = merge(values) if merge is not None else values
            return update

        return merge_answers


def _strategy_name(strategy: KeyStrategyLike) -> str:
    if isinstance(strategy, KeyStrategy):
        return strategy.name
    return str(getattr(strategy, "__name__", strategy))


def _value_of(state: OverAllState, agent: BaseAgent, answer: AssistantMessage | None) -> Any:
    """A sub-agent's result: what it wrote to its ``output_key``, else its answer's text."""
    if agent.output_key and agent.output_key in state:
        return state[agent.output_key]
    return answer.text if answer is not None else None


Flow = TypeVar("Flow", bound=FlowAgent)


class FlowAgentBuilder(FlowOptionMethods, Generic[Flow]):
    """Collects a flow's options and ``build()``s it; every method returns the builder. Get
    one with ``X.builder()`` (``SequentialAgent.builder()``, ...).

    There is one method per option of any flow, of the same name as the keyword
    (docs/multi-agent.md lists them); a flow given another kind's option says so at
    ``build()``. ``sub_agents`` and ``listeners`` take any number of values and accumulate
    across calls; the others take one value, the last call wins. ``build()`` checks
    everything at once and raises ``AgentBuildError`` listing every problem.
    """

    def __init__(self, make: Callable[..., Flow]) -> None:
        self._make = make  # the flow's class: the builder passes it the options as keywords
        self._options: dict[str, Any] = {}

    def build(self) -> Flow:
        """The flow of the options given so far; ``AgentBuildError`` lists every problem."""
        return self._make(**self._options)


add_option_methods(FlowAgentBuilder, FlowOptions)
