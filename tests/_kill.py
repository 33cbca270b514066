"""Kill -9 a worker process once it got somewhere: what the crash tests of the runtime share."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def kill_when(script: str, args: list[str], there: Callable[[], bool], settle: float = 0.5) -> None:
    """Run ``python -c script *args`` with the checkout importable; SIGKILL it once
    ``there()`` holds and ``settle`` seconds more have passed (for a write on its way to
    land). Fails with the worker's stderr if it exits first, or after 30 s."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    worker = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not there():
            assert worker.poll() is None, worker.stderr.read()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the worker never got there"
            time.sleep(0.01)
        time.sleep(settle)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        assert worker.stderr is not None
        worker.stderr.close()
