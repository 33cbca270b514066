"""Compile-time checks of a graph's shape, and the shape itself (``Shape``).

Without networkx: importing it adds about 23,000 objects to the process, which every full
collection of the garbage collector walks. ``Shape.to_networkx`` makes the ``DiGraph`` that
``get_graph()`` hands out, importing networkx then.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ._constants import END, START
from ._spec import BranchSpec, NodeSpec, distances

if TYPE_CHECKING:
    import networkx as nx


class Shape:
    """A directed graph as networkx would hold it: nodes in the order they were added, each
    edge's data (``conditional``, ``label``), and each node's successors and predecessors in
    the order their edges were added."""

    __slots__ = ("_adjacent", "_edges", "_nodes")

    def __init__(self) -> None:
        self._nodes: dict[str, None] = {}
        self._edges: dict[tuple[str, str], dict[str, Any]] = {}
        self._adjacent: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None

    def add_node(self, name: str) -> None:
        self._nodes.setdefault(name, None)

    def add_edge(self, source: str, target: str, **data: Any) -> None:
        """Add the edge (and its ends), or update the data of the edge already there."""
        self._nodes.setdefault(source, None)
        self._nodes.setdefault(target, None)
        known = self._edges.get((source, target))
        if known is None:
            self._edges[source, target] = data
            self._adjacent = None
        else:
            known.update(data)

    def has_edge(self, source: str, target: str) -> bool:
        return (source, target) in self._edges

    def edge(self, source: str, target: str) -> dict[str, Any]:
        """The edge's data (changed in place by its caller)."""
        return self._edges[source, target]

    @property
    def nodes(self) -> Iterable[str]:
        return self._nodes.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes)

    def successors(self, node: str) -> list[str]:
        return self.adjacency()[0][node]

    def predecessors(self, node: str) -> list[str]:
        return self.adjacency()[1][node]

    def edges(self, data: bool = False) -> list[Any]:
        """``(source, target, data)`` (or ``(source, target)``) by source in node order, as
        networkx lists them."""
        onward: dict[str, list[tuple[str, dict[str, Any]]]] = {n: [] for n in self._nodes}
        for (source, target), attrs in self._edges.items():
            onward[source].append((target, attrs))
        if data:
            return [(s, t, d) for s, out in onward.items() for t, d in out]
        return [(s, t) for s, out in onward.items() for t, _ in out]

    def without(self, nodes: Iterable[str] = (), edges: Iterable[tuple[str, str]] = ()) -> Shape:
        """A copy without ``nodes`` (and their edges) and without ``edges``."""
        dropped, cut = set(nodes), set(edges)
        shape = Shape()
        shape._nodes = {n: None for n in self._nodes if n not in dropped}
        shape._edges = {
            (s, t): d
            for (s, t), d in self._edges.items()
            if s not in dropped and t not in dropped and (s, t) not in cut
        }
        return shape

    def adjacency(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """Each node's successors and its predecessors (kept: not to be changed)."""
        if self._adjacent is None:
            onward: dict[str, list[str]] = {n: [] for n in self._nodes}
            back: dict[str, list[str]] = {n: [] for n in self._nodes}
            for source, target in self._edges:
                onward[source].append(target)
                back[target].append(source)
            self._adjacent = onward, back
        return self._adjacent

    def is_acyclic(self) -> bool:
        """No cycle (a node's edge to itself is one)."""
        onward, back = self.adjacency()
        waiting = {n: len(into) for n, into in back.items()}
        ready = [n for n, count in waiting.items() if count == 0]
        seen = 0
        while ready:
            node = ready.pop()
            seen += 1
            for target in onward[node]:
                waiting[target] -= 1
                if waiting[target] == 0:
                    ready.append(target)
        return seen == len(self._nodes)

    def to_networkx(self) -> nx.DiGraph:
        """The networkx ``DiGraph`` of this shape (same node, edge and data order)."""
        import networkx as nx  # only here: see the module's docstring

        graph = nx.DiGraph()
        graph.add_nodes_from(self._nodes)
        for (source, target), data in self._edges.items():
            graph.add_edge(source, target, **data)
        return graph


def build_digraph(
    nodes: Mapping[str, NodeSpec],
    edges: Iterable[tuple[str, str]],
    branches: Mapping[str, BranchSpec],
) -> Shape:
    """The graph's shape: START, END and every node; static edges, and one edge per label of
    each conditional edge (``conditional=True``, ``label=...``). A router without a path map
    may go to any node or END, so it gets an edge to each."""
    graph = Shape()
    graph.add_node(START)
    for name in nodes:
        graph.add_node(name)
    graph.add_node(END)
    for src, dst in edges:
        graph.add_edge(src, dst, conditional=False, label=None)
    for name, node in nodes.items():  # where its Command(goto=...) may lead
        for target in node.destinations:
            if not graph.has_edge(name, target):
                graph.add_edge(name, target, conditional=True, label="goto")
    for source, branch in branches.items():
        if branch.path_map is not None:
            for label, target in branch.path_map.items():
                if graph.has_edge(source, target) and graph.edge(source, target)["conditional"]:
                    data = graph.edge(source, target)
                    data["label"] = f"{data['label']}, {label}"
                else:
                    graph.add_edge(source, target, conditional=True, label=str(label))
        else:
            for target in [*nodes, END]:
                if not graph.has_edge(source, target):
                    graph.add_edge(source, target, conditional=True, label=None)
    return graph


def find_problems(
    nodes: Mapping[str, NodeSpec],
    edges: Iterable[tuple[str, str]],
    branches: Mapping[str, BranchSpec],
    interrupt_before: Iterable[str],
    interrupt_after: Iterable[str],
) -> list[str]:
    """Every problem with the graph's shape, in a stable order; empty when it is sound."""
    problems: list[str] = []
    known = set(nodes)
    edges = list(edges)
    hint = f"known nodes: {sorted(known)}"
    for src, dst in edges:
        if src != START and src not in known:
            problems.append(f"edge {src!r} -> {dst!r} starts at unknown node {src!r} ({hint})")
        if dst != END and dst not in known:
            problems.append(f"edge {src!r} -> {dst!r} ends at unknown node {dst!r} ({hint})")
    for source, branch in branches.items():
        if source != START and source not in known:
            problems.append(f"conditional edge starts at unknown node {source!r} ({hint})")
        for label, target in (branch.path_map or {}).items():
            if target != END and target not in known:
                problems.append(
                    f"conditional edge from {source!r} maps label {label!r} to unknown node "
                    f"{target!r} ({hint})"
                )
    for name, node in nodes.items():
        for target in node.destinations:
            if target != END and target not in known:
                problems.append(
                    f"node {name!r} declares destination {target!r}, an unknown node ({hint})"
                )
    for kind, names in (
        ("interrupt_before", interrupt_before),
        ("interrupt_after", interrupt_after),
    ):
        for name in names:
            if name not in known:
                problems.append(f"{kind} names unknown node {name!r} ({hint})")
    # Reachability is judged on the edges that are sound, so a misspelt edge also shows
    # which nodes it leaves stranded.
    whole = build_digraph(nodes, edges, branches)
    graph = whole.without(n for n in whole.nodes if n not in known and n not in (START, END))
    onward, back = graph.adjacency()
    # A node with no way out at all may be one that routes with Command(goto=...) and did
    # not declare where to: only then is the hint about destinations worth its words.
    has_exit = {src for src, _ in edges} | set(branches)
    dead_ends = [n for n, spec in nodes.items() if n not in has_exit and not spec.destinations]
    goto_hint = (
        "; a node that routes with Command(goto=...) declares where it may go: "
        "add_node(name, fn, destinations=[...])"
        if dead_ends
        else ""
    )
    if not onward[START]:
        problems.append(
            "no entry point: add an edge from START, e.g. add_edge(START, "
            f"{next(iter(nodes), 'first_node')!r})"
        )
        return problems
    reachable = distances(onward, START)
    unreachable = [n for n in nodes if n not in reachable]
    if unreachable:
        problems.append(
            f"node(s) {unreachable} cannot be reached from START: add an edge to them or remove "
            f"them{goto_hint}"
        )
    can_finish = distances(back, END)
    stuck = [n for n in nodes if n in reachable and n not in can_finish]
    if stuck:
        problems.append(
            f"node(s) {stuck} can never reach END: give them an outgoing edge that leads to "
            f"END{goto_hint}"
        )
    return problems
