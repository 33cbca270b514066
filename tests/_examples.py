"""Running an example the way a user would: a fresh interpreter, offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def example_process(
    name: str, *args: str, timeout: float = 60, **settings: str
) -> subprocess.CompletedProcess[str]:
    """``python examples/<name> <args>`` from the repository root, as a user would run it: no
    model settings of this machine (no API key, base URL, model name or debug switch) but
    ``settings``; empty standard input."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPH_AGENT_MODEL", "GRAPH_AGENT_DEBUG")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(settings)
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *args],
        cwd=ROOT,
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_example(name: str, *args: str, timeout: float = 60) -> str:
    """``example_process``'s standard output. Fails the test if it exits non-zero or writes to
    standard error."""
    result = example_process(name, *args, timeout=timeout)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout
