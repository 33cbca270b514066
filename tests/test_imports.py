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
