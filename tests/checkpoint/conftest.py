"""Savers under test. The contract suite runs on every factory listed in ``SAVERS``: the
in-memory saver (plain and copying), SQLite, Redis on fakeredis and Redis on a real server.

A factory closes what it opens (the SQLite file, the Redis clients) when the fixture that
called it ends, through ``request.addfinalizer``: callers need not close the saver.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import fakeredis
import pytest
import redis

from checkpoint import BaseCheckpointSaver, MemorySaver, RedisSaver, SqliteSaver

Factory = Callable[[pytest.FixtureRequest], BaseCheckpointSaver]


def _sqlite(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    saver = SqliteSaver(request.getfixturevalue("tmp_path") / "checkpoints.sqlite")
    request.addfinalizer(saver.close)
    return saver


def _fake_redis(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    client = fakeredis.FakeRedis()
    request.addfinalizer(client.close)  # a client passed in is its owner's to close
    return RedisSaver(client)


def _real_redis(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    url = request.getfixturevalue("redis_url")
    # A prefix of its own per test: tests never see each other's threads.
    saver = RedisSaver.from_url(url, key_prefix=f"t-{uuid.uuid4().hex[:8]}")
    # Closes the sync client. The async one can be closed only on the event loop it ran on:
    # a test that runs the saver under asyncio.run awaits ``saver.aclose()`` in that loop.
    request.addfinalizer(saver.close)
    return saver


SAVERS: dict[str, Factory] = {
    "memory": lambda request: MemorySaver(),
    "memory-copy": lambda request: MemorySaver(copy=True),
    "sqlite": _sqlite,
    "redis-fake": _fake_redis,
    "redis-real": _real_redis,
}


@pytest.fixture(params=sorted(SAVERS))
def any_saver(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    return SAVERS[request.param](request)


@pytest.fixture
def real_redis(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    try:
        yield client
    finally:
        client.close()
