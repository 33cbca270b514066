"""The ``graph-agent`` command: ``graph TARGET`` prints Mermaid; user errors exit 2, no traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graph_agent.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "approval_workflow.py"

GRAPH_MODULE = """
from graph_agent import END, START, StateGraph

def build() -> StateGraph:
    g = StateGraph()
    g.add_node("hello", lambda state: {"greeting": "hi"})
    g.add_edge(START, "hello").add_edge("hello", END)
    return g

state_graph = build()
compiled = build().compile()
factory = build
compiled_factory = lambda: build().compile()

class Agent:
    graph = compiled

agent = Agent()
not_a_graph = {"hello": 1}
"""


@pytest.fixture
def graphs_file(tmp_path: Path) -> Path:
    path = tmp_path / "my_graphs.py"
    path.write_text(GRAPH_MODULE)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_user_error(code: int, out: str, err: str, *fragments: str) -> None:
    assert code == 2
    assert out == ""
    assert err.startswith("graph-agent graph: error: ")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


# -- success ------------------------------------------------------------------------------


def test_graph_of_the_example_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "graph", f"{EXAMPLE}:graph")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "flowchart TD"
    for edge in (
        "__start__ --> intake",
        "intake --> check_budget",
        "check_receipts --> review",
        'approval -.->|"approve"| pay',
        'approval -.->|"reject"| reject',
        "pay --> __end__",
    ):
        assert f"    {edge}" in lines


def test_direction_lr_and_relative_path(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    code, out, _ = run(
        capsys, "graph", "examples/approval_workflow.py:build_graph", "--direction", "LR"
    )
    assert code == 0
    assert out.startswith("flowchart LR\n")


@pytest.mark.parametrize(
    "obj", ["state_graph", "compiled", "factory", "compiled_factory", "agent", "agent.graph"]
)
def test_every_kind_of_target_object(
    capsys: pytest.CaptureFixture[str], graphs_file: Path, obj: str
) -> None:
    code, out, err = run(capsys, "graph", f"{graphs_file}:{obj}")
    assert (code, err) == (0, "")
    assert out == (
        'flowchart TD\n    __start__(["start"])\n    hello["hello"]\n    __end__(["end"])\n'
        "    __start__ --> hello\n    hello --> __end__\n"
    )


def test_module_target_from_working_directory(
    capsys: pytest.CaptureFixture[str], graphs_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(graphs_file.parent)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd())])
    monkeypatch.delitem(sys.modules, "my_graphs", raising=False)
    code, out, err = run(capsys, "graph", "my_graphs:compiled")
    sys.modules.pop("my_graphs", None)
    assert (code, err) == (0, "")
    assert "hello --> __end__" in out


def test_output_printed_while_loading_goes_to_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "noisy.py"
    path.write_text(GRAPH_MODULE + "\nprint('loading noisy')\n")
    code, out, err = run(capsys, "graph", f"{path}:compiled")
    assert code == 0
    assert out.startswith("flowchart TD\n") and "loading noisy" not in out
    assert "loading noisy" in err


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "graph" in out and "demo" in out and "chat" in out


# -- user errors: exit 2, one message on stderr, no traceback ----------------------------


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert code == 2 and out == ""
    assert "required: COMMAND" in err


def test_unknown_direction(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "graph", f"{EXAMPLE}:graph", "--direction", "XX")
    assert code == 2
    assert "invalid choice: 'XX'" in err


@pytest.mark.parametrize("target", ["examples/approval_workflow.py", "graph", ":graph", "x.py:"])
def test_target_without_object(capsys: pytest.CaptureFixture[str], target: str) -> None:
    assert_user_error(*run(capsys, "graph", target), "path/to/file.py:OBJECT", repr(target))


def test_file_not_found(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "nope.py"
    assert_user_error(*run(capsys, "graph", f"{missing}:graph"), f"file not found: {missing}")


def test_file_not_found_suggests_py_suffix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert_user_error(
        *run(capsys, "graph", "examples/approval_workflow:graph"),
        "did you mean examples/approval_workflow.py?",
    )


def test_module_not_importable(capsys: pytest.CaptureFixture[str]) -> None:
    assert_user_error(
        *run(capsys, "graph", "no_such_pkg_xyz.flows:graph"),
        "no module named 'no_such_pkg_xyz.flows'",
    )


def test_module_whose_import_fails(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("import not_installed_dependency_xyz\n")
    assert_user_error(
        *run(capsys, "graph", f"{path}:graph"),
        f"importing {path} failed: ModuleNotFoundError",
        "not_installed_dependency_xyz",
        f"{path}:1",
    )


def test_file_that_raises_or_exits(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "raises.py"
    path.write_text("x = 1\nraise RuntimeError('boom at import')\n")
    assert_user_error(*run(capsys, "graph", f"{path}:x"), "RuntimeError: boom at import", ":2)")
    path.write_text("import sys\nsys.exit(3)\n")
    assert_user_error(*run(capsys, "graph", f"{path}:x"), "called sys.exit(3)")


def test_missing_attribute_lists_the_graphs(
    capsys: pytest.CaptureFixture[str], graphs_file: Path
) -> None:
    assert_user_error(
        *run(capsys, "graph", f"{graphs_file}:nope"),
        "has no attribute 'nope'",
        "graphs it defines: Agent, agent, build(), compiled, factory(), state_graph",
    )
    assert_user_error(
        *run(capsys, "graph", "json:nope"), "json has no attribute 'nope'", "no graph"
    )
    assert_user_error(
        *run(capsys, "graph", f"{graphs_file}:agent.nope"), ":agent has no attribute 'nope'"
    )


def test_wrong_object_type(capsys: pytest.CaptureFixture[str], graphs_file: Path) -> None:
    assert_user_error(
        *run(capsys, "graph", f"{graphs_file}:not_a_graph"),
        "is a dict, not a graph",
        "CompiledGraph",
        "zero-argument callable",
    )


def test_callable_needing_arguments_or_returning_no_graph(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "funcs.py"
    path.write_text(
        "def needs(x):\n    return x\n"
        "def main() -> int:\n    raise AssertionError('must not be called')\n"
        "def fails():\n    raise ValueError('no graph today')\n"
        "def number():\n    return 42\n"
    )
    assert_user_error(*run(capsys, "graph", f"{path}:needs"), "callable that needs arguments")
    assert_user_error(*run(capsys, "graph", f"{path}:main"), "main() returns int, not a graph")
    assert_user_error(
        *run(capsys, "graph", f"{path}:fails"), "calling", "ValueError: no graph today"
    )
    assert_user_error(*run(capsys, "graph", f"{path}:number"), "number() is a int, not a graph")


def test_state_graph_that_does_not_compile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad_graph.py"
    path.write_text(
        textwrap.dedent(
            """
            from graph_agent import START, StateGraph

            bad = StateGraph()
            bad.add_node("a", lambda state: None)
            bad.add_edge(START, "a").add_edge("a", "ghost")
            """
        )
    )
    assert_user_error(
        *run(capsys, "graph", f"{path}:bad"),
        "is a StateGraph that does not compile: invalid graph",
        "unknown node 'ghost'",
    )


# -- the installed command ----------------------------------------------------------------


def test_console_script_runs_in_a_subprocess(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    script = shutil.which("graph-agent")
    # Without an installed script, run the same entry point the script would.
    command = [script] if script else [sys.executable, "-m", "graph_agent.cli"]
    ok = subprocess.run(
        [*command, "graph", f"{EXAMPLE}:graph"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("flowchart TD\n") and "review --> approval" in ok.stdout
    bad = subprocess.run(
        [*command, "graph", "nowhere"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert "error: TARGET must look like" in bad.stderr and "Traceback" not in bad.stderr


def test_a_reader_that_goes_away_stops_the_command_quietly(tmp_path: Path) -> None:
    """``graph-agent demo | head``: the pipe closes before the demo is done writing."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "graph_agent.cli", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before the command has written anything
    err = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=120) == 141
    assert err == ""
