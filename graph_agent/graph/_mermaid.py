"""Mermaid flowchart text for a compiled graph."""

from __future__ import annotations

import re

import networkx as nx

from ._constants import END, START

DIRECTIONS = frozenset({"TD", "TB", "BT", "LR", "RL"})
_SAFE_ID = re.compile(r"[^A-Za-z0-9_]")


def _node_id(name: str, taken: dict[str, str]) -> str:
    if name in taken:
        return taken[name]
    base = _SAFE_ID.sub("_", name) or "node"
    if base[0].isdigit():
        base = f"n_{base}"
    if base in ("end", "graph", "subgraph", "style", "class", "click", "flowchart"):
        base = f"{base}_"
    candidate, i = base, 1
    while candidate in taken.values():
        i += 1
        candidate = f"{base}_{i}"
    taken[name] = candidate
    return candidate


def _text(label: str) -> str:
    """A quoted label that renders as written. Mermaid's entity codes do not survive every
    renderer, so the characters that would break the syntax or be read as HTML are swapped
    for look-alikes."""
    return '"' + label.translate(_LOOKALIKES) + '"'


_LOOKALIKES = str.maketrans({'"': "\u201d", "<": "\u2039", ">": "\u203a", "`": "'"})


def draw_mermaid(graph: nx.DiGraph, *, direction: str = "TD") -> str:
    """``flowchart`` text: START and END as rounded terminals, static edges solid, conditional
    edges dotted and labelled with the router's labels."""
    if direction not in DIRECTIONS:
        raise ValueError(
            f"Mermaid direction must be one of {sorted(DIRECTIONS)}, got {direction!r}"
        )
    ids: dict[str, str] = {}
    lines = [f"flowchart {direction}"]
    for name in graph.nodes:
        node_id = _node_id(name, ids)
        if name == START:
            lines.append(f'    {node_id}(["start"])')
        elif name == END:
            lines.append(f'    {node_id}(["end"])')
        else:
            lines.append(f"    {node_id}[{_text(name)}]")
    for src, dst, data in graph.edges(data=True):
        a, b = ids[src], ids[dst]
        if data.get("conditional"):
            label = data.get("label")
            lines.append(f"    {a} -.->|{_text(label)}| {b}" if label else f"    {a} -.-> {b}")
        else:
            lines.append(f"    {a} --> {b}")
    return "\n".join(lines) + "\n"
