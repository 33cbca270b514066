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

STORED = "stored@"  # the line the worker's savers add to the marks after each write

# Run before the worker's script: each write of a saver (put, put_writes and their async
# twins) adds a line "stored@N" to the marks file once it has returned, N the number of
# lines the file had when the write began, so the test waits for the write itself instead of
# a guessed time, and for one that began after a mark (a write under way when the mark was
# made may have returned after it without holding what the mark reports).
_MARK_WRITES = """
def _mark_writes(marks):
    import functools, inspect
    from checkpoint import BaseCheckpointSaver, MemorySaver, RedisSaver, SqliteSaver

    def lines():
        try:
            with open(marks) as f:
                return len(f.read().splitlines())
        except FileNotFoundError:
            return 0

    def stored(began):
        with open(marks, "a") as f:
            f.write(f"stored@{began}\\n")

    def marking(method):
        if inspect.iscoroutinefunction(method):
            @functools.wraps(method)
            async def awrite(*args, **kwargs):
                began = lines()
                result = await method(*args, **kwargs)
                stored(began)
                return result
            return awrite

        @functools.wraps(method)
        def write(*args, **kwargs):
            began = lines()
            result = method(*args, **kwargs)
            stored(began)
            return result
        return write

    for cls in (BaseCheckpointSaver, MemorySaver, RedisSaver, SqliteSaver):
        for name in ("put", "aput", "put_writes", "aput_writes"):
            if name in vars(cls):
                setattr(cls, name, marking(vars(cls)[name]))

import os as _os
_mark_writes(_os.environ["GRAPH_AGENT_TEST_MARKS"])
del _mark_writes, _os
"""


def stored_since(lines: list[str], mark: str) -> bool:
    """Whether a saver's write that began after the last ``mark`` line has returned: what
    that mark reported is stored."""
    at = [i for i, line in enumerate(lines) if line == mark]
    if not at:
        return False
    since = at[-1] + 1  # the lines the file had once the mark was made
    return any(
        line.startswith(STORED) and int(line[len(STORED) :]) >= since for line in lines[since:]
    )


def kill_when(
    script: str, args: list[str], there: Callable[[], bool], marks: Path, stored_after: str
) -> None:
    """Run ``python -c script *args`` with the checkout importable; SIGKILL it once
    ``there()`` holds and, in ``marks`` (the file the worker writes its marks to), a saver's
    write returned (``STORED``) after the last ``stored_after`` mark: the work that mark
    reported is stored. (Writes coalesce, so that holds when nothing else of the step
    finishes after that mark: a worker with several finishers orders them, each ending once
    the previous one's write landed.) Fails with the worker's stderr if it exits first, or
    after 30 s."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), GRAPH_AGENT_TEST_MARKS=str(marks))
    worker = subprocess.Popen(
        [sys.executable, "-c", _MARK_WRITES + script, *args],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip

    def landed() -> bool:
        if not there():
            return False
        return stored_since(marks.read_text().splitlines(), stored_after)

    try:
        deadline = time.monotonic() + 30
        while not landed():
            assert worker.poll() is None, worker.stderr.read()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the worker never got there"
            time.sleep(0.01)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        assert worker.stderr is not None
        worker.stderr.close()
