"""No test writes in the user's home: ``HOME`` and the XDG folders are a fresh folder of the
session's own (tests/conftest.py), in the tests and in every process they start, so what a
test opens at ``~`` (the default saver of ``graph-agent serve`` or ``chat``) is thrown away."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .conftest import HOME_VARIABLES


def test_home_and_the_xdg_folders_are_the_sessions_own() -> None:
    home = Path.home()
    assert home.name.startswith("graph-agent-tests-home-")
    assert home.parent == Path(tempfile.gettempdir()).resolve()
    for name in HOME_VARIABLES[1:]:
        assert Path(os.environ[name]).is_relative_to(home), name
    child = subprocess.run(
        [sys.executable, "-c", "from pathlib import Path; print(Path('~').expanduser())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert child.stdout.strip() == str(home)
