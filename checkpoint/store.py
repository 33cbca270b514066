"""Long-term memory shared across threads: values by namespace and key."""

from __future__ import annotations

import abc
import asyncio
import builtins
import dataclasses
import threading
import time
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from .serde import Serializer

__all__ = ["BaseStore", "Item", "MemoryStore", "RedisStore"]

Namespace = tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Item:
    """A stored value with where it lives and when it was written."""

    namespace: Namespace
    key: str
    value: Any
    created_at: datetime
    updated_at: datetime


def _namespace(namespace: Iterable[str] | str, what: str = "namespace") -> Namespace:
    parts = (namespace,) if isinstance(namespace, str) else tuple(namespace)
    if not all(isinstance(p, str) and p for p in parts):
        raise ValueError(
            f"a {what} is a tuple of non-empty strings, e.g. ('users', 'u1'); got {namespace!r}"
        )
    return parts


def _matches(value: Any, where: Mapping[str, Any] | None) -> bool:
    if not where:
        return True
    return isinstance(value, Mapping) and all(value.get(k) == v for k, v in where.items())


def _page(
    items: Iterable[Item], where: Mapping[str, Any] | None, limit: int, offset: int
) -> builtins.list[Item]:
    """The items matching ``where``, newest update first, ``offset`` skipped, at most ``limit``."""
    found = [item for item in items if _matches(item.value, where)]
    found.sort(key=lambda i: i.updated_at, reverse=True)
    return found[offset : offset + limit]


def _now() -> datetime:
    return datetime.now(timezone.utc)


class BaseStore(abc.ABC):
    """Values kept by ``(namespace, key)``, where a namespace is a tuple of strings such as
    ``("users", "u42")``. ``search`` finds items under a namespace prefix, optionally whose
    (dict) value has the given fields; ``list_namespaces`` lists what exists. Async twins run
    the sync methods in worker threads unless a store overrides them."""

    @abc.abstractmethod
    def put(self, namespace: Iterable[str], key: str, value: Any) -> None: ...

    @abc.abstractmethod
    def get(self, namespace: Iterable[str], key: str) -> Item | None: ...

    @abc.abstractmethod
    def delete(self, namespace: Iterable[str], key: str) -> None: ...

    @abc.abstractmethod
    def search(
        self,
        namespace_prefix: Iterable[str],
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> builtins.list[Item]: ...

    @abc.abstractmethod
    def list_namespaces(
        self, prefix: Iterable[str] = (), max_depth: int | None = None, limit: int = 100
    ) -> builtins.list[Namespace]: ...

    async def aput(self, namespace: Iterable[str], key: str, value: Any) -> None:
        await asyncio.to_thread(self.put, namespace, key, value)

    async def aget(self, namespace: Iterable[str], key: str) -> Item | None:
        return await asyncio.to_thread(self.get, namespace, key)

    async def adelete(self, namespace: Iterable[str], key: str) -> None:
        await asyncio.to_thread(self.delete, namespace, key)

    async def asearch(
        self,
        namespace_prefix: Iterable[str],
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> builtins.list[Item]:
        return await asyncio.to_thread(self.search, namespace_prefix, filter, limit, offset)

    async def alist_namespaces(
        self, prefix: Iterable[str] = (), max_depth: int | None = None, limit: int = 100
    ) -> builtins.list[Namespace]:
        return await asyncio.to_thread(self.list_namespaces, prefix, max_depth, limit)


def _cut(
    namespaces: Iterable[Namespace], prefix: Namespace, max_depth: int | None, limit: int
) -> builtins.list[Namespace]:
    found: dict[Namespace, None] = {}
    for ns in sorted(namespaces):
        if ns[: len(prefix)] == prefix:
            found[ns[:max_depth] if max_depth is not None else ns] = None
    return list(found)[:limit]


class MemoryStore(BaseStore):
    """A store in this process's memory (values are kept as given: treat them as read-only)."""

    def __init__(self) -> None:
        self._items: dict[Namespace, dict[str, Item]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemoryStore(namespaces={len(self._items)})"

    def put(self, namespace: Iterable[str], key: str, value: Any) -> None:
        ns = _namespace(namespace)
        now = _now()
        with self._lock:
            bucket = self._items.setdefault(ns, {})
            old = bucket.get(key)
            bucket[key] = Item(ns, key, value, old.created_at if old else now, now)

    def get(self, namespace: Iterable[str], key: str) -> Item | None:
        with self._lock:
            return self._items.get(_namespace(namespace), {}).get(key)

    def delete(self, namespace: Iterable[str], key: str) -> None:
        ns = _namespace(namespace)
        with self._lock:
            bucket = self._items.get(ns)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del self._items[ns]

    def search(
        self,
        namespace_prefix: Iterable[str],
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> builtins.list[Item]:
        prefix = tuple(namespace_prefix)
        with self._lock:
            items = [
                item
                for ns in sorted(self._items)
                if ns[: len(prefix)] == prefix
                for item in self._items[ns].values()
            ]
        return _page(items, filter, limit, offset)

    def list_namespaces(
        self, prefix: Iterable[str] = (), max_depth: int | None = None, limit: int = 100
    ) -> builtins.list[Namespace]:
        with self._lock:
            return _cut(self._items, tuple(prefix), max_depth, limit)


class RedisStore(BaseStore):
    """A store in Redis: one hash per namespace (``{prefix}:store:<namespace>``, key ->
    msgpack record) and a sorted set of namespaces for ``search`` / ``list_namespaces``.
    Works on plain Redis 7, Valkey and Redis Cluster (every command touches one key)."""

    def __init__(
        self, client: Any, *, key_prefix: str = "graph_agent", serializer: Serializer | None = None
    ) -> None:
        self.client = client
        self.key_prefix = key_prefix
        self.serializer = serializer or Serializer()
        self._owns_client = False  # from_url made it: close() closes it

    @classmethod
    def from_url(cls, url: str, *, cluster: bool = False, **options: Any) -> RedisStore:
        import redis

        client = redis.RedisCluster.from_url(url) if cluster else redis.Redis.from_url(url)
        store = cls(client, **options)
        store._owns_client = True
        return store

    def close(self) -> None:
        """Close the client ``from_url`` made (a client passed in stays open). Safe to call
        twice."""
        if self._owns_client:
            self.client.close()

    async def aclose(self) -> None:
        """``close`` for async code (the store's client is a sync one)."""
        self.close()

    def __enter__(self) -> RedisStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> RedisStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RedisStore(key_prefix={self.key_prefix!r})"

    def _key(self, ns: Namespace) -> str:
        return f"{self.key_prefix}:store:" + ":".join(quote(p, safe="") for p in ns)

    @property
    def _index(self) -> str:
        return f"{self.key_prefix}:store-namespaces"

    def _item(self, ns: Namespace, key: str, blob: bytes) -> Item:
        record = self.serializer.loads(blob)
        created, updated = (datetime.fromtimestamp(t, tz=timezone.utc) for t in record["t"])
        return Item(ns, key, record["v"], created, updated)

    def put(self, namespace: Iterable[str], key: str, value: Any) -> None:
        ns = _namespace(namespace)
        now = time.time()
        old = self.client.hget(self._key(ns), key)
        created = self.serializer.loads(old)["t"][0] if old else now
        blob = self.serializer.dumps({"v": value, "t": [created, now]}, key=f"{'/'.join(ns)}/{key}")
        self.client.hset(self._key(ns), key, blob)
        self.client.zadd(self._index, {"\x1f".join(ns): 0})

    def get(self, namespace: Iterable[str], key: str) -> Item | None:
        ns = _namespace(namespace)
        blob = self.client.hget(self._key(ns), key)
        return None if blob is None else self._item(ns, key, blob)

    def delete(self, namespace: Iterable[str], key: str) -> None:
        ns = _namespace(namespace)
        self.client.hdel(self._key(ns), key)
        if not self.client.exists(self._key(ns)):
            self.client.zrem(self._index, "\x1f".join(ns))

    def _namespaces(self, prefix: Namespace) -> builtins.list[Namespace]:
        if prefix:
            # Bytewise bounds: 0xff never occurs in UTF-8, so it sorts after every name
            # that continues the prefix, whatever its characters.
            start = "\x1f".join(prefix).encode()
            names = self.client.zrangebylex(self._index, b"[" + start, b"[" + start + b"\x1f\xff")
        else:
            names = self.client.zrange(self._index, 0, -1)
        found = [tuple(n.decode().split("\x1f")) for n in names]
        return [ns for ns in found if ns[: len(prefix)] == prefix]

    def search(
        self,
        namespace_prefix: Iterable[str],
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> builtins.list[Item]:
        items = [
            self._item(ns, key.decode(), blob)
            for ns in self._namespaces(tuple(namespace_prefix))
            for key, blob in self.client.hgetall(self._key(ns)).items()
        ]
        return _page(items, filter, limit, offset)

    def list_namespaces(
        self, prefix: Iterable[str] = (), max_depth: int | None = None, limit: int = 100
    ) -> builtins.list[Namespace]:
        return _cut(self._namespaces(tuple(prefix)), tuple(prefix), max_depth, limit)
