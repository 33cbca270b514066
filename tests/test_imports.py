"""Each package imports first, in a fresh interpreter, in any order; public names are at the roots."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("graph_agent", "checkpoint", "hooks")


@pytest.mark.parametrize("order", list(itertools.permutations(PACKAGES)))
def test_packages_import_in_any_order(order):
    code = "; ".join(f"import {name}" for name in order)
    code += "; import graph_agent; graph_agent.StateGraph; graph_agent.GraphRecursionError"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_checkpoint_imports_nothing_from_graph_agent_or_hooks():
    code = (
        "import sys, checkpoint; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('graph_agent', 'hooks')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_public_names_are_importable_from_the_package_roots():
    import checkpoint
    import graph_agent

    for name in graph_agent.__all__:
        assert getattr(graph_agent, name) is not None, name
    for name in checkpoint.__all__:
        assert getattr(checkpoint, name) is not None, name
    from graph_agent import GraphAgentError, GraphRecursionError, StateGraph  # noqa: F401

    assert issubclass(graph_agent.GraphRecursionError, RecursionError)
    assert issubclass(graph_agent.GraphValidationError, ValueError)
    assert issubclass(checkpoint.CheckpointNotFoundError, LookupError)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        graph_agent.Nope  # noqa: B018


def _module_imports() -> dict[str, set[str]]:
    """Each module of the three packages, and the modules of them it imports when it is
    imported (module level, outside ``if TYPE_CHECKING:``; imports inside functions run
    later and are left out)."""
    import ast

    modules: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = name.split(".") if is_package else name.split(".")[:-1]
                if node.level:
                    base = base[: len(base) - node.level + 1]
                    prefix = ".".join([*base, node.module] if node.module else base)
                else:
                    prefix = node.module or ""
                targets.add(prefix)
                targets.update(f"{prefix}.{alias.name}" for alias in node.names)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def test_no_module_imports_itself_through_others():
    import networkx as nx

    graph = nx.DiGraph([(a, b) for a, targets in _module_imports().items() for b in targets])
    # a package's __init__ re-exporting its own modules is not a cycle worth naming
    graph.remove_edges_from(
        [(a, b) for a, b in list(graph.edges) if b.startswith(a + ".") and "." in b]
    )
    cycles = list(itertools.islice(nx.simple_cycles(graph), 5))
    assert not cycles, f"import cycles: {cycles}"
