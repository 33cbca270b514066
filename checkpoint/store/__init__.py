"""Long-term memory shared across threads: values by namespace and key, found by key, by
their fields (``filter``) or, in a store built with an ``index``, by meaning (``query``)."""

from __future__ import annotations

import abc
import asyncio
import builtins
import dataclasses
import functools
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from ._index import IndexConfig, StoreIndex, best_score
from .embeddings import Embeddings, HashingEmbeddings, as_embeddings

__all__ = [
    "BaseStore",
    "Embeddings",
    "HashingEmbeddings",
    "IndexConfig",
    "Item",
    "MemoryStore",
    "Namespace",
    "as_embeddings",
    "checked_namespace",
    "listed_namespaces",
    "search_page",
]

Namespace = tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Item:
    """A stored value with where it lives and when it was written; ``score``, in what a
    search by ``query`` returns, is how close it is to the query (cosine similarity, higher
    is closer), ``None`` otherwise."""

    namespace: Namespace
    key: str
    value: Any
    created_at: datetime
    updated_at: datetime
    score: float | None = None


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
    (dict) value has the given fields, and, in a store built with an ``index``, closest to a
    ``query`` first; ``list_namespaces`` lists what exists. Async twins run the sync methods
    in worker threads unless a store overrides them."""

    @abc.abstractmethod
    def put(
        self,
        namespace: Iterable[str],
        key: str,
        value: Any,
        *,
        index: bool | builtins.list[str] | None = None,
    ) -> None:
        """Keep ``value``; in a store with an index, its fields are embedded (``index``:
        ``False`` keeps this one out of searches by query, a list of paths embeds those
        instead of the index's ``fields``)."""

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
        *,
        query: str | None = None,
    ) -> builtins.list[Item]:
        """Items under ``namespace_prefix`` whose value has the ``filter`` fields: newest
        first, or with ``query`` (a store with an index) closest first, each with its
        ``score``; ``offset`` skipped, at most ``limit``."""

    @abc.abstractmethod
    def list_namespaces(
        self, prefix: Iterable[str] = (), max_depth: int | None = None, limit: int = 100
    ) -> builtins.list[Namespace]: ...

    async def aput(
        self,
        namespace: Iterable[str],
        key: str,
        value: Any,
        *,
        index: bool | builtins.list[str] | None = None,
    ) -> None:
        await asyncio.to_thread(functools.partial(self.put, index=index), namespace, key, value)

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
        *,
        query: str | None = None,
    ) -> builtins.list[Item]:
        search = functools.partial(self.search, query=query)
        return await asyncio.to_thread(search, namespace_prefix, filter, limit, offset)

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


def no_index(store: object) -> ValueError:
    """The error of a search by ``query`` in a store built without an index."""
    return ValueError(
        f"{type(store).__name__} was built without an index, so it cannot search by query; "
        "build it with index={'dims': ..., 'embed': ..., 'fields': [...]} (see "
        "checkpoint.store.IndexConfig), or search with filter only"
    )


class MemoryStore(BaseStore):
    """A store in this process's memory (values are kept as given: treat them as read-only).
    With ``index`` (``IndexConfig``), the named fields of each value are embedded when it is
    put, and ``search(..., query=...)`` finds the closest first."""

    def __init__(self, *, index: IndexConfig | Mapping[str, Any] | None = None) -> None:
        self._items: dict[Namespace, dict[str, Item]] = {}
        self._vectors: dict[tuple[Namespace, str], builtins.list[builtins.list[float]]] = {}
        self._index = StoreIndex(index) if index is not None else None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemoryStore(namespaces={len(self._items)})"

    def _texts(self, value: Any, index: bool | builtins.list[str] | None) -> builtins.list[str]:
        if self._index is None or index is False:
            return []
        return self._index.texts(value, index if isinstance(index, list) else None)

    def put(
        self,
        namespace: Iterable[str],
        key: str,
        value: Any,
        *,
        index: bool | builtins.list[str] | None = None,
    ) -> None:
        ns = checked_namespace(namespace)
        texts = self._texts(value, index)
        # embedded before the lock is taken: a model call may be slow
        vectors = self._index.vectors(texts) if self._index is not None and texts else None
        self._keep(ns, key, value, vectors)

    async def aput(
        self,
        namespace: Iterable[str],
        key: str,
        value: Any,
        *,
        index: bool | builtins.list[str] | None = None,
    ) -> None:
        ns = checked_namespace(namespace)
        texts = self._texts(value, index)
        vectors = await self._index.avectors(texts) if self._index is not None and texts else None
        self._keep(ns, key, value, vectors)

    def _keep(
        self,
        ns: Namespace,
        key: str,
        value: Any,
        vectors: builtins.list[builtins.list[float]] | None,
    ) -> None:
        now = _now()
        with self._lock:
            bucket = self._items.setdefault(ns, {})
            old = bucket.get(key)
            bucket[key] = Item(ns, key, value, old.created_at if old else now, now)
            if vectors:
                self._vectors[(ns, key)] = vectors
            else:
                self._vectors.pop((ns, key), None)

    def get(self, namespace: Iterable[str], key: str) -> Item | None:
        with self._lock:
            return self._items.get(checked_namespace(namespace), {}).get(key)

    def delete(self, namespace: Iterable[str], key: str) -> None:
        ns = checked_namespace(namespace)
        with self._lock:
            self._vectors.pop((ns, key), None)
            bucket = self._items.get(ns)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del self._items[ns]

    def _under(self, prefix: Namespace) -> builtins.list[Item]:
        return [
            item
            for ns in sorted(self._items)
            if ns[: len(prefix)] == prefix
            for item in self._items[ns].values()
        ]

    def search(
        self,
        namespace_prefix: Iterable[str],
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        *,
        query: str | None = None,
    ) -> builtins.list[Item]:
        prefix = tuple(namespace_prefix)
        if query is None:
            with self._lock:
                items = self._under(prefix)
            return search_page(items, filter, limit, offset)
        if self._index is None:
            raise no_index(self)
        return self._ranked(prefix, filter, self._index.query(query), limit, offset)

    async def asearch(
        self,
        namespace_prefix: Iterable[str],
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        *,
        query: str | None = None,
    ) -> builtins.list[Item]:
        if query is None:
            return self.search(namespace_prefix, filter, limit, offset)
        if self._index is None:
            raise no_index(self)
        vector = await self._index.aquery(query)
        return self._ranked(tuple(namespace_prefix), filter, vector, limit, offset)

    def _ranked(
        self,
        prefix: Namespace,
        where: Mapping[str, Any] | None,
        query: builtins.list[float],
        limit: int,
        offset: int,
    ) -> builtins.list[Item]:
        """The filtered items with vectors under ``prefix``, closest to ``query`` first."""
        with self._lock:
            candidates = [
                (item, self._vectors[(item.namespace, item.key)])
                for item in self._under(prefix)
                if (item.namespace, item.key) in self._vectors and _matches(item.value, where)
            ]
        scored = [(best_score(query, vectors), item) for item, vectors in candidates]
        scored.sort(key=lambda pair: (pair[0], pair[1].updated_at), reverse=True)
        return [
            dataclasses.replace(item, score=score)
            for score, item in scored[offset : offset + limit]
        ]

    def list_namespaces(
        self, prefix: Iterable[str] = (), max_depth: int | None = None, limit: int = 100
    ) -> builtins.list[Namespace]:
        with self._lock:
            return listed_namespaces(self._items, tuple(prefix), max_depth, limit)
