"""A real uvicorn on a free loopback port, serving an app for the length of a test; without
the server extra or the official client (the dev extra) these tests are one "skipped" line
(a failure on CI: tests/_needs.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests._needs import Suite
from tests.redis_servers import free_port

ROOT = Path(__file__).resolve().parents[2]

NEEDS = Suite(
    __file__,
    ("starlette", "uvicorn", "httpx", "langgraph_sdk"),
    "the server and dev extras: pip install -e '.[dev,server]' (make test)",
)
collect_ignore_glob = NEEDS.ignored
pytest_collect_file = NEEDS.collect_file


@contextmanager
def live_server(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn in a thread of this process; yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"uvicorn did not start on port {port}")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def serve_process(
    module: Path, db: Path, port: int, *options: str, **env: str
) -> subprocess.Popen[bytes]:
    """``graph-agent serve <module>:agent`` as a real process on ``port``, threads in the
    SQLite file ``db``, with more command-line ``options`` and ``env`` added; returned once it
    answers ``/ok`` (asked without a token). Its stderr is a pipe (``stop_process`` closes
    it)."""
    import httpx

    process = subprocess.Popen(
        [sys.executable, "-m", "graph_agent.cli", "serve", f"{module}:agent",
         "--port", str(port), "--saver", f"sqlite:{db}", *options],
        env=dict(os.environ, PYTHONPATH=str(ROOT), **env),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, process.stderr.read()  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "graph-agent serve did not start"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ok", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.05)


def stop_process(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> str:
    """Stop a ``serve_process`` with ``sig``; what it wrote to stderr."""
    process.send_signal(sig)
    process.wait(20)
    assert process.stderr is not None
    with process.stderr:
        return process.stderr.read().decode()
