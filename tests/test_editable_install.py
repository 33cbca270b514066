"""Type checkers see the installed packages: mypy on a user's file finds ``graph_agent`` and
``checkpoint`` in the environment (``make test`` installs them editable in setuptools'
``compat`` mode; the default mode's import hook is invisible to mypy)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

from tests._needs import need_module, unavailable

USER_FILE = """\
from checkpoint import MemorySaver
from graph_agent import ReactAgent, ScriptedChatModel

agent = ReactAgent(name="typed", model=ScriptedChatModel(["hi"]), saver=MemorySaver())
answer: str = agent.call("hello").text
"""


def test_mypy_finds_the_installed_packages_from_any_directory(tmp_path: Path) -> None:
    need_module("mypy", "mypy comes with the dev extra")
    try:
        importlib.metadata.distribution("graph-agent")
    except importlib.metadata.PackageNotFoundError:
        unavailable("graph-agent is not installed in this environment (make test installs it)")
    user = tmp_path / "app.py"
    user.write_text(USER_FILE)
    # Away from the checkout, as a user's project is: only the installation can be found.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
         "--no-error-summary", str(user)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert "Cannot find implementation or library stub" not in result.stdout, (
        f"mypy does not see the installed packages; install them with "
        f"`pip install -e . --config-settings editable_mode=compat` (see the Makefile):\n"
        f"{result.stdout}"
    )
    assert result.returncode == 0, result.stdout + result.stderr
