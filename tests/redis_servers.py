"""Real Redis-protocol servers for tests: started on free loopback ports, stopped by pid.

The binary is ``$REDIS_SERVER``, else ``redis-server`` or ``valkey-server`` on PATH. Where
none exists the tests that need one are skipped with that reason, except on CI (``CI`` set),
where a missing server is a failure: CI installs ``redis-server``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def redis_binary() -> str | None:
    return (
        os.environ.get("REDIS_SERVER")
        or shutil.which("redis-server")
        or shutil.which("valkey-server")
    )


def require_binary() -> str:
    binary = redis_binary()
    if binary is None:
        reason = "no redis-server or valkey-server on PATH (or $REDIS_SERVER)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}: CI must run the real-server tests")
        pytest.skip(reason)
    return binary


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(port: int, process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"redis-server on port {port} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith((b"+PONG", b"-NOAUTH")):
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"redis-server on port {port} did not answer PING within {timeout}s")


@contextmanager
def redis_server(directory: Path, *extra: str, port: int | None = None) -> Iterator[int]:
    """A redis-server on 127.0.0.1 with no persistence; yields its port; stopped by pid."""
    binary = require_binary()
    port = port or free_port()
    directory.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
         "--dir", str(directory), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_ready(port, process)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
