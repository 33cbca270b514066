"""Fixtures shared by every test package."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ._cli import FakeOpenAI
from .redis_servers import redis_cluster, redis_server


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Redis server for the whole session (see tests/redis_servers.py)."""
    with redis_server(tmp_path_factory.mktemp("redis")) as port:
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
