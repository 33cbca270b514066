"""Which MCP SDK graph_agent.mcp runs on: the ``mcp`` extra admits the SDK's current major (2.x)
as well as 1.x from 1.22, and the MCP tests run on the major they are meant for: 2.x under
``make test``, 1.x under ``make test-mcp1`` (which sets ``GRAPH_AGENT_TEST_MCP_MAJOR=1``)."""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path

from packaging.requirements import Requirement

import graph_agent

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - pytest brings tomli on 3.10
    import tomli as tomllib


def mcp_extra() -> Requirement:
    """The ``mcp`` extra's requirement, from the pyproject.toml of the graph_agent under test."""
    pyproject = Path(graph_agent.__file__).resolve().parents[1] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    [line] = extras["optional-dependencies"]["mcp"]
    requirement = Requirement(line)
    assert requirement.name == "mcp"
    return requirement


def test_the_mcp_extra_admits_the_current_major_and_1x_from_1_22() -> None:
    """``pip install 'graph-agent[mcp]'`` beside an application on mcp 2.x neither conflicts
    nor downgrades it, and one kept on mcp<2 (1.22 or later) still resolves. (1.21 and older
    do not import beside pydantic 2.14.)"""
    admitted = mcp_extra().specifier
    for version in ("2.0.0", "2.3.0", "1.22.0", "1.30.0"):
        assert admitted.contains(version), f"mcp {version} is not in {admitted}"
    assert admitted.contains(importlib.metadata.version("mcp"))
    assert not admitted.contains("1.21.0")
    assert not admitted.contains("3.0.0")  # a major we have not tried


def test_the_tests_run_on_the_sdk_major_they_are_meant_for() -> None:
    expected = int(os.environ.get("GRAPH_AGENT_TEST_MCP_MAJOR", "2"))
    installed = importlib.metadata.version("mcp")
    assert int(installed.split(".")[0]) == expected, (
        f"the MCP tests are meant for mcp {expected}.x here, but mcp {installed} is installed "
        f"(a venv made before mcp 2 keeps its 1.x: pip install -U 'mcp>=2,<3')"
    )
    from graph_agent.mcp import _sdk

    assert expected == _sdk.MAJOR  # the compatibility point took the branch of this SDK
