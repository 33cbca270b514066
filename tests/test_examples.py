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

from ._examples import run_example as example_output

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
    sys.modules[spec.name] = module  # as an import does: its input schema's types by name
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


# -- the multi-agent examples (docs/multi-agent.md) ------------------------------------------


def test_research_team_streams_only_the_writer_and_keeps_each_step(tmp_path: Path) -> None:
    out = example_output("research_team.py", "--db", str(tmp_path / "team.sqlite"))
    lines = out.splitlines()
    assert "    planner --> researchers" in lines and "    researchers --> writer" in lines
    assert "    __start__ --> history" in lines and "    market --> merge" in lines
    brief = (
        "Green tea in brief. Green tea was first drunk in China, some 4,000 years ago. A cup "
        "holds about 30 mg of caffeine. China grows most of the world's green tea."
    )
    # the streamed text is the writer's answer only: no plan, no notes before it
    assert f"writer (streamed): {brief}" in lines
    assert (
        "plan:  Plan for green tea: 1. where it comes from; 2. what is in a cup; 3. who grows it."
        in lines
    )
    assert "notes['history']: Green tea was first drunk in China, some 4,000 years ago." in lines
    assert "notes['science']: A cup holds about 30 mg of caffeine." in lines
    assert "notes['market']: China grows most of the world's green tea." in lines
    assert "brief: the writer's answer, as streamed: True" in lines
    conversation = lines[
        lines.index("== the conversation: the request, then one answer per sub-agent") + 1 :
    ]
    assert conversation[:3] == [
        "  [user] Write a brief on green tea.",
        "  [planner] Plan for green tea: 1. where it comes from; 2. what is in a cup; 3. who grows it.",
        "  [researchers] history:",
    ]
    assert f"  [writer] {brief}" in conversation
    assert conversation[-1] == "thread 'research-team' kept in team.sqlite: 4 messages"
    # the thread is on disk: a second run continues it
    again = example_output("research_team.py", "--db", str(tmp_path / "team.sqlite"))
    assert again.splitlines()[-1] == "thread 'research-team' kept in team.sqlite: 8 messages"


def test_support_handoffs_keeps_the_agent_that_took_over_until_it_hands_back() -> None:
    out = example_output("support_handoffs.py")
    turns = out.split("== turn ")[1:]
    assert [t.splitlines()[0] for t in turns] == [
        "1: starts with triage",
        "2: starts with billing",  # the next turn stays with the agent that took over
        "3: starts with billing",
        "4: starts with tech",
    ]
    assert turns[0].splitlines()[2:] == [
        "  [triage] hands the conversation to billing",
        "  [billing] list_charges -> C-1: 42.00 EUR on May 3; C-2: 42.00 EUR on May 3",
        "  [billing] refund -> refund R-1 issued for C-2",
        "billing: You were charged twice on May 3; I refunded C-2 (R-1).",
        "active agent now: billing",
    ]
    assert turns[1].splitlines()[2:] == [
        "billing: Refunds reach your card within 3 to 5 business days.",
        "active agent now: billing",
    ]
    assert turns[2].splitlines()[2:4] == [
        "  [billing] hands the conversation to triage",
        "  [triage] hands the conversation to tech",
    ]
    assert "active agent now: tech" in turns[2]
    assert turns[3].splitlines()[2:] == [
        "  [tech] hands the conversation to triage",
        "triage: Glad it's sorted! Anything else I can help you with?",
        "active agent now: triage",
        "== one thread, 24 messages: 8 tool calls (handoffs included), 8 answered",
    ]


def test_agent_as_tool_shows_nested_events_and_resumes_the_approval_in_place() -> None:
    out = example_output("agent_as_tool.py")
    first, paused, resumed = (
        out.split("== 1. ", 1)[1].split("== 2. ", 1)[0],
        out.split("== 2. ", 1)[1].split("== 3. ", 1)[0],
        out.split("== 3. ", 1)[1],
    )

    def of(part: str, agent: str) -> list[str]:
        """One agent's lines, in order (the two sub-agents run at once: their lines may
        interleave)."""
        return [
            " ".join(line.split()[1:])
            for line in part.splitlines()
            if line.split() and line.split()[0] == agent
        ]

    assert of(first, "trip_planner/flights") == [
        "run_start",
        "model_end asks for find_flights",
        'tool_start find_flights({"destination": "Lisbon", "date": "2025-06-12"})',
        "tool_end find_flights -> TP 1351 to Lisbon on 2025-06-12, 08:10, 129 EUR",
        "model_end answers 'Best flight: TP 1351 to Lisbon on 2025-06-12, 08:10, 129 EUR.'",
        "run_end",
    ]
    assert of(first, "trip_planner/hotels") == [
        "run_start",
        "model_end asks for book_hotel",
        "interrupt paused: tool_approval",
        "run_end",
    ]
    root = of(first, "trip_planner")
    assert root[:2] == ["run_start", "model_end asks for flights, hotels"]
    assert root[-2:] == ["interrupt paused: tool_approval", "run_end"]
    assert not any(line.startswith("tool_end hotels") for line in root)  # still waiting
    assert paused.splitlines()[1:] == [
        '  trip_planner/hotels asks to run book_hotel({"city": "Lisbon", "nights": 3})',
        "  booked so far: []",
    ]
    assert "paused: the orchestrator waits in ['tools']" in paused
    # resumed in place: the hotels agent continues, flights does not run again
    assert "trip_planner/flights" not in resumed
    assert of(resumed, "trip_planner/hotels") == [
        "run_start",
        'tool_start book_hotel({"city": "Lisbon", "nights": 3})',
        "tool_end book_hotel -> booked Casa do Rio, Lisbon, 3 nights, booking H-77",
        "model_end answers 'Hotel: booked Casa do Rio, Lisbon, 3 nights, booking H-77.'",
        "run_end",
    ]
    assert "  booked: ['3 nights in Lisbon']" in resumed
    assert resumed.splitlines()[-1] == (
        "trip_planner: Your trip is ready. Best flight: TP 1351 to Lisbon on 2025-06-12, "
        "08:10, 129 EUR. Hotel: booked Casa do Rio, Lisbon, 3 nights, booking H-77."
    )
