"""Mermaid flowchart text for a compiled graph."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._constants import END, START

if TYPE_CHECKING:
    from ._validate import Shape

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


@dataclass(frozen=True)
class Inside:
    """A graph drawn inside one of its parent's nodes (a subgraph, a sub-agent): its title,
    its graph, and what is drawn inside its own nodes."""

    title: str
    graph: Shape
    inside: Mapping[str, Sequence[Inside]]


def draw_mermaid(
    graph: Shape,
    *,
    direction: str = "TD",
    inside: Mapping[str, Sequence[Inside]] | None = None,
) -> str:
    """``flowchart`` text: START and END as rounded terminals, static edges solid, conditional
    edges dotted and labelled with the router's labels. A node with graphs ``inside`` it is
    drawn as a Mermaid ``subgraph`` box holding their nodes and edges (their own START and
    END left out: the box's incoming and outgoing edges say where it starts and ends)."""
    if direction not in DIRECTIONS:
        raise ValueError(
            f"Mermaid direction must be one of {sorted(DIRECTIONS)}, got {direction!r}"
        )
    ids: dict[str, str] = {}
    lines = [f"flowchart {direction}"]
    _draw(graph, inside or {}, "", ids, lines, "    ", top=True)
    return "\n".join(lines) + "\n"


def _draw(
    graph: Shape,
    inside: Mapping[str, Sequence[Inside]],
    prefix: str,
    ids: dict[str, str],
    lines: list[str],
    indent: str,
    top: bool,
) -> None:
    shown = [n for n in graph.nodes if top or n not in (START, END)]
    for name in shown:
        node_id = _node_id(prefix + name, ids)
        if name == START:
            lines.append(f'{indent}{node_id}(["start"])')
        elif name == END:
            lines.append(f'{indent}{node_id}(["end"])')
        elif inside.get(name):
            lines.append(f"{indent}subgraph {node_id}[{_text(name)}]")
            for child in inside[name]:
                boxed = len(inside[name]) > 1 or child.title != name
                inner = f"{prefix}{name}/{child.title}/" if boxed else f"{prefix}{name}/"
                if boxed:
                    child_id = _node_id(inner, ids)
                    lines.append(f"{indent}    subgraph {child_id}[{_text(child.title)}]")
                    _draw(child.graph, child.inside, inner, ids, lines, indent + "        ", False)
                    lines.append(f"{indent}    end")
                else:
                    _draw(child.graph, child.inside, inner, ids, lines, indent + "    ", False)
            lines.append(f"{indent}end")
        else:
            lines.append(f"{indent}{node_id}[{_text(name)}]")
    for src, dst, data in graph.edges(data=True):
        if src not in shown or dst not in shown:
            continue
        a, b = ids[prefix + src], ids[prefix + dst]
        if data.get("conditional"):
            label = data.get("label")
            lines.append(
                f"{indent}{a} -.->|{_text(label)}| {b}" if label else f"{indent}{a} -.-> {b}"
            )
        else:
            lines.append(f"{indent}{a} --> {b}")
