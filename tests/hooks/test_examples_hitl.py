"""examples/human_in_the_loop.py runs offline and does what its output says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "human_in_the_loop.py"


def run_example(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        cwd=ROOT,
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )


def section(out: str, thread: str) -> str:
    start = out.index(f"== thread '{thread}'")
    end = out.find("\n== thread", start + 1)
    return out[start : end if end != -1 else len(out)]


def test_the_three_decisions() -> None:
    result = run_example()
    assert result.returncode == 0, result.stderr
    out = result.stdout
    pending = 'paused before send_payment({"to": "Alice", "amount": 120.0, "currency": "EUR"})'
    for thread in ("hitl-approve", "hitl-reject", "hitl-edit"):
        assert pending in section(out, thread)
        assert "A payment needs your approval" in section(out, thread)

    approve = section(out, "hitl-approve")
    assert "decision for call_1: approved" in approve
    assert "executed: 120.00 EUR to Alice" in approve
    assert "assistant: Done: sent 120.00 EUR to Alice." in approve

    reject = section(out, "hitl-reject")
    assert "decision for call_1: rejected (reason: I already paid Alice in cash)" in reject
    assert "executed: nothing" in reject
    assert "you declined it (I already paid Alice in cash)" in reject

    edit = section(out, "hitl-edit")
    assert 'edited -> {"to": "Alice", "amount": 100.0, "currency": "EUR"}' in edit
    assert "executed: 100.00 EUR to Alice" in edit
    assert "assistant: Done: sent 100.00 EUR to Alice." in edit

    assert "ledger: ['120.00 EUR to Alice', '100.00 EUR to Alice']" in out


def test_help_mentions_live() -> None:
    result = run_example("--help")
    assert result.returncode == 0, result.stderr
    assert "--live" in result.stdout
