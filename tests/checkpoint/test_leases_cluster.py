"""Leases and fenced writes on a real three-node Redis Cluster (the session fixture
``cluster_ports``): the checks of ``test_leases.py``, and a thread's lease in its slot."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis

from checkpoint import BaseCheckpointSaver, CheckpointDelta, LeaseLostError, RedisSaver

from . import test_leases as leases
from .test_redis_cluster import THREADS
from .test_saver_contract import make


@pytest.fixture
def cluster(cluster_ports: list[int]) -> Iterator[redis.RedisCluster]:
    client = redis.RedisCluster(host="127.0.0.1", port=cluster_ports[0])
    try:
        yield client
    finally:
        client.close()


def _prefix(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize(
    "check", leases.CHECKS, ids=[c.__name__.removeprefix("check_") for c in leases.CHECKS]
)
def test_leases_on_the_cluster(
    cluster: redis.RedisCluster, check: Callable[[BaseCheckpointSaver], None]
) -> None:
    check(RedisSaver(cluster, key_prefix=_prefix("leases")))


def test_a_threads_lease_is_in_its_slot_and_fences_on_every_node(
    cluster: redis.RedisCluster,
) -> None:
    saver = RedisSaver(cluster, key_prefix=_prefix("lease-slots"))
    for thread in THREADS:  # threads whose slots are on all three nodes
        slot = int(cluster.execute_command("CLUSTER KEYSLOT", saver.keys(thread)[0]))
        assert int(cluster.execute_command("CLUSTER KEYSLOT", saver.lease_key(thread))) == slot
        assert saver.acquire_lease(thread, f"{thread}-1", 30)
        root = make(thread, None, 0, {"n": 1})
        saver.put(root, fence=f"{thread}-1")
        child = make(thread, root.id, 1, {"n": 2})
        with pytest.raises(LeaseLostError):
            saver.put(child, CheckpointDelta(replaced={"n": 2}), fence="stale")
        assert saver.get(thread).id == root.id


def test_async_twins_on_the_cluster(cluster_url: str) -> None:
    saver = RedisSaver.from_url(cluster_url, cluster=True, key_prefix=_prefix("lease-async"))

    async def main() -> None:
        try:
            assert await saver.aacquire_lease("t", "first", 30)
            assert not await saver.aacquire_lease("t", "second", 30)
            root = make("t", None, 0, {"n": 1})
            await saver.aput(root, fence="first")
            with pytest.raises(LeaseLostError):
                await saver.aput_writes(root, fence="second")
            await saver.arelease_lease("t", "first")
            assert await saver.alease_holder("t") is None
        finally:
            await saver.aclose()

    asyncio.run(main())
