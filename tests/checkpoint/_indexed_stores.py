"""The store backends the semantic-index tests run on: name -> (pytest request) -> a
function ``index -> store`` whose stores are closed when the test ends."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import fakeredis
import pytest

from checkpoint import RedisStore
from checkpoint.store import IndexedStore, MemoryStore, SqliteStore

MakeStore = Callable[[Mapping[str, Any]], IndexedStore]


def _memory(request: pytest.FixtureRequest) -> MakeStore:
    return lambda index: MemoryStore(index=index)


def _memory_plain_python(request: pytest.FixtureRequest) -> MakeStore:
    """A MemoryStore scoring without numpy (the fallback when the extra is missing)."""

    def make(index: Mapping[str, Any]) -> IndexedStore:
        store = MemoryStore(index=index)
        assert store._index is not None
        store._index.cache.numpy = False
        return store

    return make


def _sqlite(request: pytest.FixtureRequest) -> MakeStore:
    """A SqliteStore in a file of the test's own folder (one per store made)."""
    folder = request.getfixturevalue("tmp_path")
    made = iter(range(1_000_000))
    return _closing(
        request, lambda index: SqliteStore(folder / f"store-{next(made)}.db", index=index)
    )


def _closing(request: pytest.FixtureRequest, make: MakeStore) -> MakeStore:
    """``make``, each store it makes closed at the end of the test."""
    stack = contextlib.ExitStack()
    request.addfinalizer(stack.close)

    def made(index: Mapping[str, Any]) -> IndexedStore:
        store = make(index)
        close = getattr(store, "close", None)
        if close is not None:
            stack.callback(close)
        return store

    return made


def _redis_fake(request: pytest.FixtureRequest) -> MakeStore:
    """RedisStores on one fakeredis server, each under a key prefix of its own."""
    server = fakeredis.FakeServer()
    return _closing(
        request,
        lambda index: RedisStore(
            fakeredis.FakeRedis(server=server), key_prefix=_prefix(), index=index
        ),
    )


def _redis_real(request: pytest.FixtureRequest) -> MakeStore:
    url = request.getfixturevalue("redis_url")
    return _closing(
        request, lambda index: RedisStore.from_url(url, key_prefix=_prefix(), index=index)
    )


def _redis_cluster(request: pytest.FixtureRequest) -> MakeStore:
    url = request.getfixturevalue("cluster_url")
    return _closing(
        request,
        lambda index: RedisStore.from_url(url, cluster=True, key_prefix=_prefix(), index=index),
    )


def _redis_query_engine(request: pytest.FixtureRequest) -> MakeStore:
    """RedisStores searching on the server: its Query Engine (RediSearch) has the index."""
    url = request.getfixturevalue("query_engine_url")
    return _closing(
        request,
        lambda index: RedisStore.from_url(
            url, key_prefix=_prefix(), index=index, vector_search="server"
        ),
    )


def _prefix() -> str:
    return f"ix-{uuid.uuid4().hex[:8]}"


INDEXED: dict[str, Callable[[pytest.FixtureRequest], MakeStore]] = {
    "memory": _memory,
    "memory-plain-python": _memory_plain_python,
    "sqlite": _sqlite,
    "redis-fake": _redis_fake,
    "redis-real": _redis_real,
    "redis-cluster": _redis_cluster,
    "redis-query-engine": _redis_query_engine,
}
