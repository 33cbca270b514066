"""Building a graph: nodes, edges, conditional edges, then ``compile()``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import GraphUsageError, GraphValidationError
from ._constants import END, START
from ._input_schema import InputSchema
from ._spec import (
    BeforeInput,
    BranchSpec,
    CleanInput,
    GraphSpec,
    NodeSpec,
    Reachability,
    node_implementations,
)
from ._subgraph import NS_SEP, SubgraphNode
from ._validate import build_digraph, find_problems
from .compiled import CompiledGraph
from .retry import RetryPolicy
from .state import KeyStrategy, KeyStrategyLike

if TYPE_CHECKING:
    import networkx as nx

    from checkpoint import BaseCheckpointSaver

__all__ = ["DEFAULT_RECURSION_LIMIT", "StateGraph"]

DEFAULT_RECURSION_LIMIT = 25


class StateGraph:
    """A graph of nodes over a shared state, built step by step and then compiled.

    ``key_strategies`` says how updates to each key merge (``KeyStrategy`` or a callable
    ``(old, new) -> merged``); keys not listed are REPLACE. ``private_keys`` are kept with the
    thread and handed to nodes, but left out of what callers see (``invoke``'s result,
    ``get_state``, streamed states): bookkeeping such as an agent's ``jump_to``.
    ``input_schema`` (a pydantic model, a dataclass or a TypedDict) says what a run's new input
    is: served, it is the assistant's ``input_schema`` (the web page's form), and each new
    input is checked against it (``GraphUsageError`` naming the fields that do not fit) and
    used as given. Every method returns the graph, so calls chain.
    """

    def __init__(
        self,
        key_strategies: Mapping[str, KeyStrategyLike] | None = None,
        *,
        private_keys: Iterable[str] = (),
        input_schema: Any = None,
    ) -> None:
        if isinstance(key_strategies, type) or not isinstance(
            key_strategies, (Mapping, type(None))
        ):
            raise GraphValidationError(
                [
                    f"StateGraph takes key_strategies, a mapping of state key -> strategy, not "
                    f"{getattr(key_strategies, '__name__', type(key_strategies).__name__)!r}: the "
                    "state has whatever keys nodes write (a state schema such as a TypedDict is "
                    "not needed); e.g. StateGraph({'messages': KeyStrategy.APPEND})"
                ]
            )
        strategies = dict(key_strategies or {})
        for key, strategy in strategies.items():
            if not isinstance(key, str):
                raise GraphValidationError([f"key_strategies keys must be str, got {key!r}"])
            if not isinstance(strategy, KeyStrategy) and not callable(strategy):
                raise GraphValidationError(
                    [
                        f"key strategy for {key!r} must be a KeyStrategy or a callable "
                        f"(old, new) -> merged, got {strategy!r}"
                    ]
                )
        self.key_strategies: dict[str, KeyStrategyLike] = strategies
        self.private_keys = frozenset(private_keys)
        # what a run's new input is: clients read it as JSON Schema, each input is checked
        self.input_schema = InputSchema(input_schema) if input_schema is not None else None
        self._nodes: dict[str, NodeSpec] = {}
        self._edges: list[tuple[str, str]] = []
        self._branches: dict[str, BranchSpec] = {}

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(self._nodes)

    def add_node(
        self,
        name: str,
        action: Callable[..., Any] | StateGraph | CompiledGraph,
        aaction: Callable[..., Any] | None = None,
        *,
        retry: RetryPolicy | None = None,
        input_keys: Iterable[str] | None = None,
        output_keys: Iterable[str] | None = None,
        destinations: Iterable[str] = (),
    ) -> StateGraph:
        """Add a node.

        ``action(state)`` or ``action(state, config)``, sync or async, returns a dict of state
        updates, ``None``, or a ``Command(update=..., goto=...)``. Give a sync ``action`` and
        an async ``aaction`` (or an object with a sync ``__call__`` and an async ``acall``)
        and ``invoke`` uses the first while ``ainvoke`` awaits the second. A ``StateGraph``
        or ``CompiledGraph`` as ``action`` is a subgraph: it sees the state (``input_keys``
        of it) and what it writes is the node's update (``output_keys`` of it). ``retry``
        runs a failing task again (``RetryPolicy``). ``destinations`` names the nodes (or
        END) a node's ``Command(goto=...)`` may lead to, for ``compile()``'s checks, the
        join rule and drawings."""
        if not isinstance(name, str) or not name:
            raise GraphValidationError([f"node name must be a non-empty str, got {name!r}"])
        if name in (START, END):
            raise GraphValidationError([f"{name!r} is reserved; choose another node name"])
        if NS_SEP in name or ":" in name:
            raise GraphValidationError(
                [f"node name {name!r} contains '{NS_SEP}' or ':', which name subgraph paths"]
            )
        if name in self._nodes:
            raise GraphValidationError([f"node {name!r} is already in the graph"])
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise GraphValidationError(
                [f"node {name!r}: retry must be a RetryPolicy, got {type(retry).__name__}"]
            )
        ins = None if input_keys is None else tuple(input_keys)
        outs = None if output_keys is None else tuple(output_keys)
        if isinstance(action, (StateGraph, CompiledGraph)):
            if aaction is not None:
                raise GraphValidationError([f"subgraph node {name!r} takes no second action"])
            sub = _subgraph_node(name, action, ins, outs)
            fn: Callable[..., Any] | None = sub
            afn: Callable[..., Any] | None = sub.acall
        else:
            if not callable(action):
                raise GraphValidationError(
                    [f"node {name!r} needs a callable action, got {type(action).__name__}"]
                )
            if ins is not None or outs is not None:
                raise GraphValidationError(
                    [f"node {name!r}: input_keys/output_keys are for subgraph nodes"]
                )
            fn, afn = node_implementations(name, action, aaction)
        targets = (destinations,) if isinstance(destinations, str) else tuple(destinations)
        self._nodes[name] = NodeSpec(name, fn, afn, len(self._nodes), retry, ins, outs, targets)
        return self

    def add_edge(self, source: str | Sequence[str], target: str) -> StateGraph:
        """Run ``target`` after ``source``. Several edges out of one node fan out in parallel;
        a node reached by parallel branches runs once, after all of them. A list of sources is
        shorthand for one edge from each."""
        sources = [source] if isinstance(source, str) else list(source)
        for src in sources:
            if src == END:
                raise GraphValidationError([f"END has no outgoing edges (edge END -> {target!r})"])
            if target == START:
                raise GraphValidationError([f"START has no incoming edges (edge {src!r} -> START)"])
            self._edges.append((src, target))
        return self

    def add_conditional_edges(
        self,
        source: str,
        router: Callable[..., Any],
        path_map: Mapping[Any, str] | Iterable[str] | None = None,
    ) -> StateGraph:
        """After ``source``, call ``router(state)`` or ``router(state, config)`` (sync or async)
        on the merged state. It returns a label of ``path_map`` (or, without a map, a node name
        or END), or a list of them to run several nodes in parallel. A list of names as
        ``path_map`` maps each name to itself."""
        if source in self._branches:
            raise GraphValidationError([f"node {source!r} already has conditional edges"])
        if source == END:
            raise GraphValidationError(["END has no outgoing edges"])
        if not callable(router):
            raise GraphValidationError(
                [f"router for {source!r} must be callable, got {type(router).__name__}"]
            )
        if path_map is not None and not isinstance(path_map, Mapping):
            path_map = {name: name for name in path_map}
        self._branches[source] = BranchSpec(source, router, path_map)
        return self

    def get_graph(self) -> nx.DiGraph:
        """The networkx ``DiGraph`` as built so far (see ``CompiledGraph.get_graph``)."""
        return build_digraph(self._nodes, self._edges, self._branches).to_networkx()

    def compile(
        self,
        saver: BaseCheckpointSaver | None = None,
        interrupt_before: Iterable[str] = (),
        interrupt_after: Iterable[str] = (),
        recursion_limit: int | None = None,
        listeners: Iterable[Any] = (),
        name: str | None = None,
        *,
        before_input: BeforeInput | None = None,
        clean_input: CleanInput | None = None,
        agent: bool = False,
    ) -> CompiledGraph:
        """Validate the graph and return a runnable ``CompiledGraph``.

        Raises ``GraphValidationError`` listing every problem: edges to unknown nodes, no
        entry from START, nodes unreachable from START or that can never reach END,
        conditional edges mapping to unknown nodes, interrupts on unknown nodes.

        ``recursion_limit`` caps the super-steps of one run (``GraphRecursionError`` beyond).
        By default it is 25, or the number of nodes when the graph has no cycle and is
        longer than that, so a long pipeline never trips a limit meant to stop loops.

        ``listeners`` receive every run event (objects with ``on_event(event)``; see
        ``graph_agent.events``). ``name`` names the graph in run events, logs and traces
        (default ``"graph"``; a subgraph without one is named by its node).

        ``before_input(values, input, kept)`` lets the graph's owner adjust new input given
        to a thread that has a checkpoint, before it is merged: ``values`` is the stored
        state, ``kept`` what a stopped step kept (its resume values); it returns the input to
        merge (``ReactAgent`` answers tool calls a stopped run left unanswered this way).
        ``clean_input(input)`` rewrites each run's new input (a dict) before anything sees
        it: the ``run_start`` event, the input checkpoint, the state (``ReactAgent`` removes
        personal data so, with a ``PIIHook``); what it raises fails the run.
        ``agent=True`` marks the graph's runs as agent runs (``RunStart.agent``, the
        ``invoke_agent`` span).
        """
        from checkpoint import BaseCheckpointSaver

        before = [interrupt_before] if isinstance(interrupt_before, str) else list(interrupt_before)
        after = [interrupt_after] if isinstance(interrupt_after, str) else list(interrupt_after)
        problems = find_problems(self._nodes, self._edges, self._branches, before, after)
        if saver is not None and not isinstance(saver, BaseCheckpointSaver):
            problems.append(
                f"saver must be a BaseCheckpointSaver (e.g. MemorySaver()), got {type(saver).__name__}"
            )
        if (before or after) and saver is None:
            problems.append(
                "interrupt_before/interrupt_after need a saver to keep the paused thread: "
                "compile(saver=MemorySaver(), ...)"
            )
        if recursion_limit is not None and (
            not isinstance(recursion_limit, int) or recursion_limit < 1
        ):
            problems.append(f"recursion_limit must be a positive int, got {recursion_limit!r}")
        if before_input is not None and not callable(before_input):
            problems.append(
                f"before_input must be a function (values, input, kept) -> input, got {before_input!r}"
            )
        if clean_input is not None and not callable(clean_input):
            problems.append(f"clean_input must be a function (input) -> input, got {clean_input!r}")
        if name is not None and (not isinstance(name, str) or not name):
            problems.append(f"name must be a non-empty str, got {name!r}")
        listeners = tuple(listeners)
        for listener in listeners:
            if not callable(getattr(listener, "on_event", None)):
                problems.append(
                    f"listener {listener!r} has no on_event(event) method; see graph_agent.events"
                )
        if problems:
            raise GraphValidationError(problems)
        digraph = build_digraph(self._nodes, self._edges, self._branches)
        # Joins wait on the edges the graph declares: a router without a path map declares
        # none, so it does not hold back the nodes beside it.
        declared = digraph.without(
            edges=[
                (u, v)
                for u, v, d in digraph.edges(data=True)
                if d["conditional"] and u in self._branches and self._branches[u].path_map is None
            ],
        )
        if recursion_limit is None:
            recursion_limit = DEFAULT_RECURSION_LIMIT
            if digraph.is_acyclic():
                recursion_limit = max(recursion_limit, len(self._nodes))
        spec = GraphSpec(
            nodes=self._nodes,
            edges=self._edges,
            branches=self._branches,
            strategies=self.key_strategies,
            interrupt_before=frozenset(before),
            interrupt_after=frozenset(after),
            default_recursion_limit=recursion_limit,
            reach=Reachability(declared),
            private=self.private_keys,
            name=name,
        )
        spec.before_input = before_input
        spec.clean_input = clean_input
        spec.input_schema = self.input_schema
        spec.is_agent = agent
        return CompiledGraph(spec, saver, digraph, listeners)


def _subgraph_node(
    name: str,
    action: StateGraph | CompiledGraph,
    input_keys: tuple[str, ...] | None,
    output_keys: tuple[str, ...] | None,
) -> SubgraphNode:
    graph = action if isinstance(action, CompiledGraph) else action.compile()
    if graph.saver is not None:
        raise GraphUsageError(
            f"subgraph '{name}' was compiled with a saver; compile it without one: a subgraph "
            "keeps its checkpoints with the parent graph's saver, in the parent's thread"
        )
    return graph.subgraph_node(name, input_keys=input_keys, output_keys=output_keys)
