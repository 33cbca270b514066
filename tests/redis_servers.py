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
from contextlib import ExitStack, contextmanager
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


@contextmanager
def redis_cluster(directory: Path, nodes: int = 3, timeout: float = 60.0) -> Iterator[list[int]]:
    """A Redis Cluster of ``nodes`` masters (no replicas) on 127.0.0.1; yields their ports.

    Each node is a ``redis_server`` started with ``--cluster-enabled yes`` (its cluster bus on
    a free port of its own, so no port + 10000 arithmetic can overflow), the cluster is made
    with ``redis-cli --cluster create ... --cluster-yes``, and this waits until every node
    says ``cluster_state:ok`` and knows every other node. Every server is stopped by pid on
    exit. The CLI is ``$REDIS_CLI``, the ``redis-cli``/``valkey-cli`` next to the server
    binary, or one on PATH; where none exists this skips (fails on CI), like a missing server.
    """
    import redis

    binary = require_binary()
    siblings = [Path(binary).with_name(name) for name in ("redis-cli", "valkey-cli")]
    cli = (
        os.environ.get("REDIS_CLI")
        or next((str(p) for p in siblings if p.is_file() and os.access(p, os.X_OK)), None)
        or shutil.which("redis-cli")
        or shutil.which("valkey-cli")
    )
    if cli is None:
        reason = "no redis-cli or valkey-cli on PATH (or $REDIS_CLI) to create a cluster"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}: CI must run the real-server tests")
        pytest.skip(reason)
    directory.mkdir(parents=True, exist_ok=True)
    ports: list[int] = []
    while len(ports) < 2 * nodes:  # a client port and a bus port per node, all distinct
        port = free_port()
        if port not in ports:
            ports.append(port)
    clients: list[redis.Redis] = []
    with ExitStack() as stack:
        for port, bus in zip(ports[:nodes], ports[nodes:]):
            options = [
                "--cluster-enabled", "yes",
                "--cluster-config-file", str(directory / f"nodes-{port}.conf"),
                "--cluster-node-timeout", "5000",
                "--cluster-port", str(bus),
            ]  # fmt: skip
            stack.enter_context(redis_server(directory / f"node-{port}", *options, port=port))
            client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10)
            stack.callback(client.close)
            clients.append(client)
        created = subprocess.run(
            [cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports[:nodes]),
             "--cluster-replicas", "0", "--cluster-yes"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
        )  # fmt: skip
        if created.returncode != 0:
            output = (created.stdout + created.stderr).decode(errors="replace")
            raise RuntimeError(
                f"redis-cli --cluster create failed ({created.returncode}):\n{output}"
            )
        deadline = time.monotonic() + timeout
        while True:
            infos = [_cluster_info(client.execute_command("CLUSTER INFO")) for client in clients]
            if all(
                info.get("cluster_state") == "ok"
                and info.get("cluster_known_nodes") == str(nodes)
                and info.get("cluster_slots_ok") == "16384"
                for info in infos
            ):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster did not become ready within {timeout}s: {infos}")
            time.sleep(0.1)
        yield ports[:nodes]


def _cluster_info(reply: object) -> dict[str, str]:
    """``CLUSTER INFO`` as a dict of strings, whether the client parsed it already or not."""
    if isinstance(reply, dict):
        return {str(k): v.decode() if isinstance(v, bytes) else str(v) for k, v in reply.items()}
    text = reply.decode() if isinstance(reply, bytes) else str(reply)
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
