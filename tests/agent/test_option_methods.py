"""The builders' option methods are made from the option records at import; type checkers
and editors see them through ``agent/_option_methods.py``, generated from the same records.
This test fails when that file is behind a record; run this file to write it again:

    .venv/bin/python tests/agent/test_option_methods.py
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from graph_agent.agent._option_record import typed_methods
from graph_agent.agent._options import AgentOptions
from graph_agent.agent.builder import ReactAgentBuilder
from graph_agent.agent.flows._base import FlowAgentBuilder
from graph_agent.agent.flows._options import FlowOptions

ROOT = Path(__file__).parents[2]
MODULE = ROOT / "graph_agent" / "agent" / "_option_methods.py"
BUILDERS = {
    "AgentOptionMethods": (ReactAgentBuilder, AgentOptions),
    "FlowOptionMethods": (FlowAgentBuilder, FlowOptions),
}


def formatted(source: str) -> str:
    """``source`` as the project's ruff sorts its imports and formats it."""
    ruff = [sys.executable, "-m", "ruff"]
    where = ["--stdin-filename", str(MODULE.relative_to(ROOT))]
    for command in (
        ["check", "--fix", "--select", "I", "-q", *where, "-"],
        ["format", *where, "-"],
    ):
        source = subprocess.run(
            [*ruff, *command], input=source, capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout
    return source


def test_the_typed_methods_are_those_the_records_make() -> None:
    expected = formatted(typed_methods(BUILDERS))
    assert MODULE.read_text(encoding="utf-8") == expected, (
        "agent/_option_methods.py is behind the option records; write it again with "
        "`python tests/agent/test_option_methods.py`"
    )


def test_type_checkers_see_every_made_method_and_no_other(tmp_path: Path) -> None:
    """A misspelt builder method is a type error; a right one is typed (mypy, strict)."""
    program = (
        "from graph_agent import ReactAgent, SequentialAgent\n"
        "b = ReactAgent.builder().name('a').tools(len).parallel_tool_execution()\n"
        "reveal_type(b)\n"
        "reveal_type(b.build())\n"
        "reveal_type(SequentialAgent.builder().name('s').max_iterations(2).build())\n"
        "ReactAgent.builder().nmae('a')\n"
        "ReactAgent.builder().max_iterations('3')\n"
    )
    (tmp_path / "uses_builders.py").write_text(program, encoding="utf-8")
    cache = ["--cache-dir", str(tmp_path / "cache"), "--config-file", ""]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", *cache, str(tmp_path / "uses_builders.py")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    lines = result.stdout.splitlines()
    assert (
        'Revealed type is "graph_agent.agent.builder.ReactAgentBuilder[graph_agent.agent.react.ReactAgent]"'
        in result.stdout
    ), lines
    assert 'Revealed type is "graph_agent.agent.react.ReactAgent"' in result.stdout, lines
    assert (
        'Revealed type is "graph_agent.agent.flows.sequential.SequentialAgent"' in result.stdout
    ), lines
    errors = [line for line in lines if ": error:" in line]
    assert len(errors) == 2, lines
    assert '"ReactAgentBuilder[ReactAgent]" has no attribute "nmae"' in errors[0]
    assert 'Argument 1 to "max_iterations"' in errors[1] and '"str"' in errors[1]


if __name__ == "__main__":
    MODULE.write_text(formatted(typed_methods(BUILDERS)), encoding="utf-8")
    print(f"wrote {MODULE}")
