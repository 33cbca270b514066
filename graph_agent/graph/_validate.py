"""Compile-time checks of a graph's shape, with networkx."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import networkx as nx

from ._constants import END, START
from ._spec import BranchSpec, NodeSpec


def build_digraph(
    nodes: Mapping[str, NodeSpec],
    edges: Iterable[tuple[str, str]],
    branches: Mapping[str, BranchSpec],
) -> nx.DiGraph:
    """The graph as networkx sees it: START, END and every node; static edges, and one edge
    per label of each conditional edge (``conditional=True``, ``label=...``). A router
    without a path map may go to any node or END, so it gets an edge to each."""
    graph = nx.DiGraph()
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
                if graph.has_edge(source, target) and graph.edges[source, target]["conditional"]:
                    previous = graph.edges[source, target]["label"]
                    graph.edges[source, target]["label"] = f"{previous}, {label}"
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
    graph = build_digraph(nodes, edges, branches)
    graph.remove_nodes_from(
        [n for n in list(graph.nodes) if n not in known and n not in (START, END)]
    )
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
    if graph.out_degree(START) == 0:
        problems.append(
            "no entry point: add an edge from START, e.g. add_edge(START, "
            f"{next(iter(nodes), 'first_node')!r})"
        )
        return problems
    reachable = nx.descendants(graph, START)
    unreachable = [n for n in nodes if n not in reachable]
    if unreachable:
        problems.append(
            f"node(s) {unreachable} cannot be reached from START: add an edge to them or remove "
            f"them{goto_hint}"
        )
    can_finish = nx.ancestors(graph, END)
    stuck = [n for n in nodes if n in reachable and n not in can_finish]
    if stuck:
        problems.append(
            f"node(s) {stuck} can never reach END: give them an outgoing edge that leads to "
            f"END{goto_hint}"
        )
    return problems
