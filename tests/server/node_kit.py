"""What the tests of the JS clients share (test_js_client.py, test_agui_js_client.py,
test_usestream.py): the npm packages each installs from its folder's lockfile, found where
``.ci/run`` and ``make test`` put them (an environment variable naming their
``node_modules``) or in the folder itself, and a client script run with Node.js against a
live server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests._needs import unavailable

__all__ = ["installed", "run_client"]

ROOT = Path(__file__).resolve().parents[2]


def installed(folder: Path, variable: str, packages: Sequence[str]) -> Path | None:
    """The ``node_modules`` that holds ``packages`` (``$variable``'s, else the folder's own),
    ``None`` when neither does."""
    given = os.environ.get(variable)
    for where in (Path(given) if given else None, folder / "node_modules"):
        if where is not None and all((where / name).is_dir() for name in packages):
            return where
    return None


def run_client(
    folder: Path, variable: str, packages: Sequence[str], url: str, tmp_path: Path
) -> Any:
    """Run ``folder``'s ``client.mjs`` against ``url`` with Node.js; the JSON of its last
    line. Without node or the packages the test skips, saying how to install them (a failure
    on CI: tests/_needs.py)."""
    modules, node = installed(folder, variable, packages), shutil.which("node")
    if modules is None or node is None:
        unavailable(
            f"needs node and {', '.join(packages)}: npm ci --prefix {folder.relative_to(ROOT)} "
            f"(or {variable}=<its node_modules>); .ci/run installs both"
        )
    # an ES module finds its imports next to itself
    shutil.copy(folder / "client.mjs", tmp_path / "client.mjs")
    (tmp_path / "node_modules").symlink_to(modules)
    done = subprocess.run(
        [node, str(tmp_path / "client.mjs"), url], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
