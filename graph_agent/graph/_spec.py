"""The immutable description of a graph that the engine runs."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from ..errors import GraphValidationError
from ._input_schema import InputSchema
from ._merge import rules_of
from .retry import RetryPolicy
from .state import KeyStrategy, KeyStrategyLike

BeforeInput = Callable[[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]], Mapping[str, Any]]
"""``compile(before_input=...)``: (stored values, new input, kept resume values) -> input."""

CleanInput = Callable[[Mapping[str, Any]], Mapping[str, Any]]
"""``compile(clean_input=...)``: a run's new input -> the input to announce, store and run."""


def _is_async_callable(fn: Any) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    )


def _takes_config(fn: Callable[..., Any], what: str) -> bool:
    """Whether ``fn`` is called as ``fn(state, config)`` rather than ``fn(state)``.

    A second positional parameter means config, unless it has a default and is neither
    named ``config`` nor annotated ``RunnableConfig`` (``lambda s, name=name: ...``).
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: assume (state)
        return False
    positional = []
    for param in signature.parameters.values():
        if param.kind is param.VAR_POSITIONAL:
            return True
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            positional.append(param)
    if not positional:
        raise GraphValidationError(
            [
                f"{what} must accept (state) or (state, config), but {fn!r} takes no positional arguments"
            ]
        )
    if len(positional) < 2:
        return False
    second = positional[1]
    if second.default is second.empty:
        return True
    annotation = second.annotation
    named = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return second.name == "config" or "RunnableConfig" in str(named)


class NodeSpec:
    """A node: how to call it (sync ``fn``, async ``afn``, or both), its retry policy, and
    its position (the merge order)."""

    __slots__ = (
        "afn",
        "afn_takes_config",
        "destinations",
        "fn",
        "index",
        "input_keys",
        "name",
        "output_keys",
        "retry",
        "takes_config",
    )

    def __init__(
        self,
        name: str,
        fn: Callable[..., Any] | None,
        afn: Callable[..., Any] | None,
        index: int,
        retry: RetryPolicy | None = None,
        input_keys: tuple[str, ...] | None = None,
        output_keys: tuple[str, ...] | None = None,
        destinations: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.destinations = destinations
        self.fn = fn
        self.afn = afn
        self.index = index
        self.retry = retry
        self.input_keys = input_keys
        self.output_keys = output_keys
        self.takes_config = _takes_config(fn, f"node '{name}'") if fn is not None else False
        self.afn_takes_config = _takes_config(afn, f"node '{name}'") if afn is not None else False

    @property
    def is_async(self) -> bool:
        """Whether the node has only an async implementation (sync runs cannot call it)."""
        return self.fn is None


def node_implementations(
    name: str, action: Callable[..., Any], aaction: Callable[..., Any] | None
) -> tuple[Callable[..., Any] | None, Callable[..., Any] | None]:
    """The sync and async implementations of a node given as ``action`` (sync or async, or
    an object with a sync ``__call__`` and an async ``acall``) and an optional ``aaction``."""
    if aaction is not None:
        if not _is_async_callable(aaction):
            raise GraphValidationError(
                [
                    f"node {name!r}: the second implementation must be async (async def), got {aaction!r}"
                ]
            )
        if _is_async_callable(action):
            raise GraphValidationError(
                [f"node {name!r}: give a sync function and an async one, not two async ones"]
            )
        return action, aaction
    if _is_async_callable(action):
        return None, action
    acall = getattr(action, "acall", None)
    if acall is not None and _is_async_callable(acall):
        return action, acall
    return action, None


class BranchSpec:
    """A conditional edge: a router and the labels it may return."""

    __slots__ = ("fn", "is_async", "path_map", "source", "takes_config")

    def __init__(
        self, source: str, fn: Callable[..., Any], path_map: Mapping[Any, str] | None
    ) -> None:
        self.source = source
        self.fn = fn
        self.path_map = dict(path_map) if path_map is not None else None
        self.is_async = _is_async_callable(fn)
        self.takes_config = _takes_config(fn, f"router of the conditional edge from '{source}'")


class Adjacent(Protocol):
    """A directed graph's nodes (iterated) and the nodes next to each (``_validate.Shape``,
    or a networkx ``DiGraph``)."""

    def __iter__(self) -> Iterator[str]: ...
    def successors(self, node: str) -> Iterable[str]: ...
    def predecessors(self, node: str) -> Iterable[str]: ...


class Reachability:
    """Which scheduled nodes hold a node back at a join, from how many edges it takes to get
    from one node to another; worked out per node on demand (only steps that run several
    nodes ask), then kept."""

    __slots__ = ("_blockers", "_graph", "_lock", "_pred", "_succ")

    def __init__(self, graph: Adjacent) -> None:
        self._graph = graph
        self._succ: dict[str, list[str]] = {}
        self._pred: dict[str, list[str]] = {}
        self._blockers: dict[str, frozenset[str]] = {}
        self._lock = threading.Lock()

    def blockers(self, node: str) -> frozenset[str]:
        """The nodes that make ``node`` wait while they are scheduled beside it: every node
        that can reach it, unless ``node`` can reach that node too and no later than it
        would be reached (in a cycle the nearer upstream node goes first)."""
        found = self._blockers.get(node)
        if found is None:
            with self._lock:
                if not self._succ:
                    graph = self._graph
                    self._succ = {n: list(graph.successors(n)) for n in graph}
                    self._pred = {n: list(graph.predecessors(n)) for n in graph}
                onward = distances(self._succ, node)
                found = frozenset(
                    m
                    for m, d in distances(self._pred, node).items()
                    if m not in onward or d < onward[m]
                )
                self._blockers[node] = found
        return found


def distances(adjacent: Mapping[str, list[str]], source: str) -> dict[str, int]:
    """Edges from ``source`` to every node reachable over ``adjacent`` (itself excluded)."""
    seen = {source: 0}
    layer = [source]
    depth = 0
    while layer:
        depth += 1
        following = []
        for node in layer:
            for other in adjacent.get(node, ()):
                if other not in seen:
                    seen[other] = depth
                    following.append(other)
        layer = following
    del seen[source]
    return seen


class GraphSpec:
    """Everything the engine needs, fixed at ``compile()``."""

    __slots__ = (
        "before_input",
        "branches",
        "clean_input",
        "default_recursion_limit",
        "drawn_inside",
        "edges",
        "has_async",
        "input_schema",
        "interrupt_after",
        "interrupt_before",
        "is_agent",
        "name",
        "nodes",
        "private",
        "reach",
        "rules",
        "static_after",
        "static_next",
        "strategies",
    )

    def __init__(
        self,
        nodes: Mapping[str, NodeSpec],
        edges: list[tuple[str, str]],
        branches: Mapping[str, BranchSpec],
        strategies: Mapping[str, KeyStrategyLike],
        interrupt_before: frozenset[str],
        interrupt_after: frozenset[str],
        default_recursion_limit: int,
        reach: Reachability,
        private: frozenset[str] = frozenset(),
        name: str | None = None,
    ) -> None:
        self.private = private
        self.name = name  # compile(name=...): what run events, logs and traces call the graph
        self.is_agent = False  # compile(agent=True): its runs are agent runs (invoke_agent spans)
        self.before_input: BeforeInput | None = None  # compile(before_input=...)
        self.clean_input: CleanInput | None = None  # compile(clean_input=...)
        self.input_schema: InputSchema | None = None  # StateGraph(input_schema=...)
        # Graphs ``draw_mermaid`` draws inside a node besides a subgraph's (an owner sets it:
        # a supervisor's agents inside its tool node), as (title, spec) pairs.
        self.drawn_inside: dict[str, list[tuple[str, GraphSpec]]] = {}
        self.nodes = dict(nodes)
        self.edges = list(edges)
        self.branches = dict(branches)
        self.strategies: dict[str, KeyStrategyLike] = dict(strategies)
        self.rules = rules_of(self.strategies)  # what each strategy means (``_merge``)
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after
        self.default_recursion_limit = default_recursion_limit
        self.reach = reach
        static: dict[str, list[str]] = {}
        for src, dst in edges:
            targets = static.setdefault(src, [])
            if dst not in targets:
                targets.append(dst)
        self.static_next: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in static.items()}
        # what a node without a router triggers, END dropped, in node order (the fast path)
        self.static_after: dict[str, list[str]] = {
            k: sorted((t for t in v if t in self.nodes), key=lambda n: self.nodes[n].index)
            for k, v in static.items()
        }
        self.has_async = [n.name for n in self.nodes.values() if n.fn is None] + [
            f"router of '{b.source}'" for b in self.branches.values() if b.is_async
        ]

    def public(self, values: Mapping[str, Any]) -> Mapping[str, Any]:
        """``values`` without the graph's private keys (what callers and snapshots see)."""
        private = self.private
        if not private:
            return values
        return {k: v for k, v in values.items() if k not in private}

    def strategy(self, key: str) -> KeyStrategyLike:
        return self.strategies.get(key, KeyStrategy.REPLACE)
