"""Long-term memory shared across threads: values by namespace and key."""

from __future__ import annotations

import abc
import asyncio
import builtins
import dataclasses
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

__all__ = [
    "BaseStore",
    "Item",
    "MemoryStore",
    "Namespace",
    "checked_namespace",
    "listed_namespaces",
    "search_page",
]

Namespace = tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Item:
    """A stored value with where it lives and when it was written."""

    namespace: Namespace
    key: str
    value: Any
    created_at: datetime
    updated_at: datetime


def checked_namespace(namespace: Iterable[str] | str) -> Namespace:
    """``namespace`` as a tuple (a string is one part); a ``ValueError`` saying what a
    namespace is unless every part is a non-empty string. For a store's methods (``put``,
    ``get``, ``delete``)."""
    parts = (namespace,) if isinstance(namespace, str) else tuple(namespace)
    if not all(isinstance(p, str) and p for p in parts):
        raise ValueError(
            f"a namespace is a tuple of non-empty strings, e.g. ('users', 'u1'); got {namespace!r}"
        )
    return parts


def _matches(value: Any, where: Mapping[str, Any] | None) -> bool:
    if not where:
        return True
    return isinstance(value, Mapping) and all(value.get(k) == v for k, v in where.items())


def search_page(
    items: Iterable[Item], where: Mapping[str, Any] | None, limit: int, offset: int
) -> builtins.list[Item]:
    """What a store's ``search`` returns of ``items`` (those under its prefix): the ones
    whose dict value has the ``where`` fields, newest update first, ``offset`` skipped, at
    most ``limit``."""
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


def listed_namespaces(
    namespaces: Iterable[Namespace], prefix: Namespace, max_depth: int | None, limit: int
) -> builtins.list[Namespace]:
    """What a store's ``list_namespaces`` returns of ``namespaces`` (those holding an item):
    the ones under ``prefix``, sorted, cut to ``max_depth`` parts (once each), at most
    ``limit``."""
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
        ns = checked_namespace(namespace)
        now = _now()
        with self._lock:
            bucket = self._items.setdefault(ns, {})
            old = bucket.get(key)
            bucket[key] = Item(ns, key, value, old.created_at if old else now, now)

    def get(self, namespace: Iterable[str], key: str) -> Item | None:
        with self._lock:
            return self._items.get(checked_namespace(namespace), {}).get(key)

    def delete(self, namespace: Iterable[str], key: str) -> None:
        ns = checked_namespace(namespace)
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
        return search_page(items, filter, limit, offset)

    def list_namespaces(
        self, prefix: Iterable[str] = (), max_depth: int | None = None, limit: int = 100
    ) -> builtins.list[Namespace]:
        with self._lock:
            return listed_namespaces(self._items, tuple(prefix), max_depth, limit)
