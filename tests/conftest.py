"""Fixtures shared by every test package, and a home folder of the session's own."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ._cli import FakeOpenAI
from .redis_servers import query_engine_server, redis_cluster, redis_server

# No test writes outside its temporary folder, and the user's home is outside: what reads
# ``~`` (the default savers of ``graph-agent chat`` and ``serve``, ``~/.cache``, ...) finds a
# fresh folder of the session's own, in every test and every process a test starts. What the
# suite needs from the real home is passed by absolute paths (MERMAID_JS, LANGGRAPH_SDK_JS).
HOME_VARIABLES = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")
_SAVED = pytest.StashKey[tuple[Path, dict[str, str | None]]]()


def pytest_configure(config: pytest.Config) -> None:
    home = Path(tempfile.mkdtemp(prefix="graph-agent-tests-home-")).resolve()
    config.stash[_SAVED] = (home, {name: os.environ.get(name) for name in HOME_VARIABLES})
    os.environ["HOME"] = str(home)
    for name, folder in zip(
        HOME_VARIABLES[1:], (".config", ".local/share", ".cache", ".local/state")
    ):
        os.environ[name] = str(home / folder)


def pytest_unconfigure(config: pytest.Config) -> None:
    home, saved = config.stash[_SAVED]
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Redis server for the whole session (see tests/redis_servers.py)."""
    with redis_server(tmp_path_factory.mktemp("redis")) as port:
        yield f"redis://127.0.0.1:{port}/0"


@pytest.fixture(scope="session")
def query_engine_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real server with the Query Engine (RediSearch) for the whole session (see
    tests/redis_servers.py, query_engine_server)."""
    with query_engine_server(tmp_path_factory.mktemp("redis-query-engine")) as port:
        yield f"redis://127.0.0.1:{port}/0"


@pytest.fixture(scope="session")
def cluster_ports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[int]]:
    """A real three-node Redis Cluster for the session; its nodes' ports (the checkpoint
    tests and the agents' flow tests share it)."""
    with redis_cluster(tmp_path_factory.mktemp("redis-cluster"), nodes=3) as ports:
        yield ports


@pytest.fixture
def cluster_url(cluster_ports: list[int]) -> str:
    return f"redis://127.0.0.1:{cluster_ports[0]}"


@pytest.fixture(params=["memory", "sqlite", "redis-fake"])
def durable(request: pytest.FixtureRequest) -> Any:
    """The savers the runtime's state tests run on: in memory, a SQLite file, Redis."""
    from tests.checkpoint.conftest import SAVERS

    return SAVERS[request.param](request)  # the factory closes it when the fixture ends


@pytest.fixture
def fake_model() -> Iterator[FakeOpenAI]:
    """A loopback OpenAI-compatible server for ``graph-agent chat`` processes (tests/_cli.py)."""
    with FakeOpenAI() as server:
        yield server
