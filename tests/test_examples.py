"""The examples run offline, end to end, and do what their output says."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from graph_agent import Command, CompiledGraph, RunnableConfig

ROOT = Path(__file__).resolve().parents[1]
APPROVAL = ROOT / "examples" / "approval_workflow.py"


def run_example(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, str(APPROVAL), *args],
        cwd=ROOT,
        env=env,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def approval() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_example_approval_workflow", APPROVAL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_auto_approves_and_pays() -> None:
    result = run_example("--auto")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Paused during node 'approval'; next=['approval']" in out
    assert "question: Pay 544.50 to Ada?" in out
    assert "Resume with Command(resume='approve')" in out
    assert "step 2: check_policy, check_budget, check_receipts" in out
    assert "pay             -> {'status': 'paid 544.50'}" in out
    assert "'decision': 'approve', 'status': 'paid 544.50'" in out
    assert "approve or reject?" not in out  # --auto never asks
    assert result.stderr == ""


def test_decision_reject_goes_to_reject() -> None:
    result = run_example("--decision", "reject")
    assert result.returncode == 0, result.stderr
    assert "Resume with Command(resume='reject')" in result.stdout
    assert "'decision': 'reject', 'status': 'rejected'" in result.stdout
    assert "paid" not in result.stdout


@pytest.mark.parametrize(
    ("stdin", "decision"), [("a\n", "approve"), ("no\n", "reject"), ("", "reject")]
)
def test_interactive_answer_from_stdin(stdin: str, decision: str) -> None:
    result = run_example(stdin=stdin)
    assert result.returncode == 0, result.stderr
    assert "approve or reject? [a/r]" in result.stdout
    assert f"Command(resume={decision!r})" in result.stdout
    if not stdin:
        assert "no input: treating as reject" in result.stdout


def test_bad_decision_is_a_usage_error() -> None:
    result = run_example("--decision", "maybe")
    assert result.returncode == 2
    assert "invalid choice: 'maybe'" in result.stderr


def test_module_level_graph_is_compiled(approval: ModuleType) -> None:
    assert isinstance(approval.graph, CompiledGraph)
    assert set(approval.graph.nodes) >= {"intake", "review", "approval", "pay", "reject"}


@pytest.mark.parametrize(("answer", "status"), [("approve", "paid 544.50"), ("reject", "rejected")])
def test_pauses_at_approval_then_resumes(approval: ModuleType, answer: str, status: str) -> None:
    app: CompiledGraph = approval.build_graph()
    config = RunnableConfig(thread_id=f"t-{answer}")
    paused_values = app.invoke({"report": approval.REPORT}, config)
    assert "decision" not in paused_values
    assert [f["check"] for f in paused_values["findings"]] == ["policy", "budget", "receipts"]

    snapshot = app.get_state(config)
    assert snapshot is not None
    assert snapshot.next == ("approval",)
    (pending,) = snapshot.interrupts
    assert (pending.node, pending.when) == ("approval", "during")
    value: dict[str, Any] = pending.value
    assert value["proposal"] == "approve" and value["risk"] == "medium"
    assert value["issues"] == ["missing receipts: team dinner"]

    final = app.invoke(Command(resume=answer), config)
    assert final["decision"] == answer
    assert final["status"] == status
    done = app.get_state(config)
    assert done is not None and done.next == () and done.interrupts == ()
    ran = [node for snap in app.get_state_history(config) for node in snap.metadata["nodes"]]
    assert ("pay" in ran) == (answer == "approve")
    assert ("reject" in ran) == (answer == "reject")
    assert ran.count("review") == 1  # the join ran once, after all three checks


def test_readme_quick_start_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "['hello, Ada', 'HELLO, ADA']",
        "['hello, Ada', 'HELLO, ADA', 'hello, Bob', 'HELLO, BOB']",
    ]


RESEARCH = ROOT / "examples" / "research_subgraph.py"


def _research(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, str(RESEARCH), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _run_research(*args: str) -> str:
    result = _research(*args)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def test_research_subgraph_pauses_in_the_child_and_a_second_process_resumes_it(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "desk.sqlite")
    first = _run_research("--db", db).splitlines()
    assert first[:5] == [
        "ran desk.plan",
        "ran research.search",
        "ran research.search",
        "ran research.search",
        "ran research.digest",
    ]
    assert "paused in research.editor_review: Publish this digest?" in first
    (namespace,) = [line for line in first if line.startswith("  namespace: ")]
    assert re.fullmatch(r"  namespace: \('research:[0-9a-f-]{36}',\)", namespace)
    assert "  the research subgraph waits at ['editor_review']" in first
    assert not any(line.startswith("REPORT") for line in first)
    second = _run_research("--db", db, "--resume", "approved: short").splitlines()
    # the child continued where it stopped: no search ran again
    assert second[:4] == [
        "resuming with 'approved: short'",
        "ran research.editor_review",
        "ran desk.research",
        "ran desk.write",
    ]
    assert second[4].startswith("REPORT (approved: short): bats: Bats navigate")
    assert second[4].index("bats:") < second[4].index("moths:") < second[4].index("owls:")


def test_research_subgraph_runs_both_halves_by_default() -> None:
    out = _run_research()
    assert "paused in research.editor_review" in out
    assert "REPORT (approved): bats:" in out


def test_research_subgraph_says_which_half_to_run(tmp_path: Path) -> None:
    db = str(tmp_path / "desk.sqlite")
    early = _research("--db", db, "--resume", "approved")  # nothing paused yet
    assert early.returncode == 2
    assert "is not paused: run without --resume first" in early.stderr
    assert _research("--db", db).returncode == 0
    again = _research("--db", db)  # paused: starting over would need the editor first
    assert again.returncode == 2
    assert "waits for the editor: add --resume ANSWER" in again.stderr
    assert "REPORT (yes):" in _run_research("--db", db, "--resume", "yes")
