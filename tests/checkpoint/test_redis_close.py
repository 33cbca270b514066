"""RedisSaver and RedisStore close the clients they made, and only those; both are sync and
async context managers."""

from __future__ import annotations

import asyncio

import redis

from checkpoint import RedisSaver, RedisStore


def open_connections(client: redis.Redis) -> int:
    """The client's connected sockets."""
    pool = client.connection_pool
    every = [*pool._available_connections, *pool._in_use_connections]
    return sum(1 for connection in every if connection.is_connected)


def test_a_saver_from_a_url_closes_its_client(redis_url: str) -> None:
    with RedisSaver.from_url(redis_url) as saver:
        assert saver.get("nobody") is None
        assert open_connections(saver.client) == 1
    assert open_connections(saver.client) == 0


def test_a_client_passed_in_stays_open(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    with RedisSaver(client) as saver, RedisStore(client) as store:
        saver.get("nobody")
        store.get(("ns",), "k")
    assert client.ping() and open_connections(client) == 1
    client.close()


def test_async_close_closes_the_async_client_on_its_loop(redis_url: str) -> None:
    async def use() -> RedisSaver:
        async with RedisSaver.from_url(redis_url) as saver:
            assert await saver.aget("nobody") is None
        return saver

    saver = asyncio.run(use())
    assert open_connections(saver.client) == 0
    pool = saver.async_client.connection_pool
    assert not pool._in_use_connections and all(
        not c.is_connected for c in pool._available_connections
    )


def test_a_store_from_a_url_closes_its_client(redis_url: str) -> None:
    with RedisStore.from_url(redis_url) as store:
        store.put(("ns",), "k", {"v": 1})
        assert store.get(("ns",), "k").value == {"v": 1}
    assert open_connections(store.client) == 0
