"""Running an example the way a user would: a fresh interpreter, offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str, *args: str, timeout: float = 60) -> str:
    """``python examples/<name> <args>`` from the repository root, with no API key set; its
    standard output. Fails the test if it exits non-zero or writes to standard error."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("OPENAI_API_KEY", None)
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *args],
        cwd=ROOT,
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout
