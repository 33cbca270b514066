"""Savers under test. The contract suite runs on every factory listed in ``SAVERS``: the
in-memory saver (plain and copying), SQLite, Redis on fakeredis and Redis on a real server."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import fakeredis
import pytest
import redis

from checkpoint import BaseCheckpointSaver, MemorySaver, RedisSaver, SqliteSaver

Factory = Callable[[pytest.FixtureRequest], BaseCheckpointSaver]


def _real_redis(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    url = request.getfixturevalue("redis_url")
    # A prefix of its own per test: tests never see each other's threads.
    return RedisSaver.from_url(url, key_prefix=f"t-{uuid.uuid4().hex[:8]}")


SAVERS: dict[str, Factory] = {
    "memory": lambda request: MemorySaver(),
    "memory-copy": lambda request: MemorySaver(copy=True),
    "sqlite": lambda request: SqliteSaver(
        request.getfixturevalue("tmp_path") / "checkpoints.sqlite"
    ),
    "redis-fake": lambda request: RedisSaver(fakeredis.FakeRedis()),
    "redis-real": _real_redis,
}


@pytest.fixture(params=sorted(SAVERS))
def any_saver(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    return SAVERS[request.param](request)


@pytest.fixture
def real_redis(redis_url: str) -> redis.Redis:
    return redis.Redis.from_url(redis_url)
