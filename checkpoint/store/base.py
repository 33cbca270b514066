"""What every store is: ``Item``, ``BaseStore`` (the abstract API), ``IndexedStore`` (the
put and search drivers of a store with a semantic index, written once for every backend),
and the helpers backends share."""

from __future__ import annotations

import abc
import asyncio
import builtins
import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from typing import Any, TypeVar

from ..errors import CheckpointError
from ._index import IndexConfig, StoreIndex
from ._vectors import Vector, ranked
from .embeddings import aembed_documents

__all__ = [
    "BaseStore",
    "IndexedStore",
    "Item",
    "Namespace",
    "NoIndexError",
    "checked_namespace",
    "listed_namespaces",
    "matcher",
    "no_index",
    "search_page",
    "utc_now",
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


def matcher(where: Mapping[str, Any] | None) -> Callable[[Any], bool]:
    """A store's ``filter`` as a test of a value: whether it is a dict with every field of
    ``where`` (``None`` or empty: every value passes)."""
    if not where:
        return _anything
    fields = list(where.items())

    def test(value: Any) -> bool:
        if type(value) is not dict and not isinstance(value, Mapping):
            return False
        for key, wanted in fields:  # noqa: SIM110 - no generator per value: a search's hot path
            if value.get(key) != wanted:
                return False
        return True

    return test


def _anything(value: Any) -> bool:
    return True


def search_page(
    items: Iterable[Item], where: Mapping[str, Any] | None, limit: int, offset: int
) -> builtins.list[Item]:
    """What a store's ``search`` returns of ``items`` (those under its prefix): the ones
    whose dict value has the ``where`` fields, newest update first, ``offset`` skipped, at
    most ``limit``."""
    test = matcher(where)
    found = [item for item in items if test(item.value)]
    found.sort(key=lambda i: i.updated_at, reverse=True)
    return found[offset : offset + limit]


def utc_now() -> datetime:
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


class NoIndexError(CheckpointError, ValueError):
    """A search by ``query`` in a store built without an index."""


def no_index(store: object) -> NoIndexError:
    """The error of a search by ``query`` in a store built without an index."""
    return NoIndexError(
        f"{type(store).__name__} was built without an index, so it cannot search by query; "
        "build it with index={'dims': ..., 'embed': ..., 'fields': [...]} (see "
        "checkpoint.store.IndexConfig), or search with filter only"
    )


_T = TypeVar("_T")


def _updated_at(item: Item) -> datetime:
    return item.updated_at


Candidate = tuple[Item, tuple[str, ...]]


class IndexedStore(BaseStore):
    """A store that may have a semantic index: ``put`` embeds the value's texts (outside
    any lock or transaction, a text once) and ``search(..., query=...)`` ranks by meaning;
    sync and async share these drivers. A backend gives:

    - ``_write(ns, key, value, vectors)``: keep the item with its vectors by digest
      (``None``: the item has none; the old ones go), atomically;
    - ``_stored_vectors(digests)``: the vectors it keeps, by digest;
    - ``_candidates(prefix, where)``: the items under ``prefix`` matching ``where`` that have
      vectors, each with its vectors' digests;
    - ``_plain_search(prefix, where, limit, offset)``: today's search, without a query.

    ``_blocking``: the backend does I/O, so the async drivers run it in worker threads."""

    _index: StoreIndex | None = None
    _blocking = True

    def _set_index(self, index: IndexConfig | Mapping[str, Any] | None) -> None:
        self._index = StoreIndex(index) if index is not None else None

    @abc.abstractmethod
    def _write(
        self, ns: Namespace, key: str, value: Any, vectors: Mapping[str, bytes] | None
    ) -> None: ...

    @abc.abstractmethod
    def _stored_vectors(self, digests: builtins.list[str]) -> Mapping[str, bytes]: ...

    @abc.abstractmethod
    def _candidates(
        self, prefix: Namespace, where: Mapping[str, Any] | None
    ) -> builtins.list[Candidate]: ...

    @abc.abstractmethod
    def _plain_search(
        self, prefix: Namespace, where: Mapping[str, Any] | None, limit: int, offset: int
    ) -> builtins.list[Item]: ...

    async def _io(self, call: Callable[..., _T], *args: Any) -> _T:
        return await asyncio.to_thread(call, *args) if self._blocking else call(*args)

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
        """Keep ``value`` under ``(namespace, key)`` (an update keeps ``created_at``); in a
        store with an index, its fields are embedded (``index``: ``False`` keeps this one
        out of searches by query, a list of paths embeds those instead of the index's
        ``fields``)."""
        ns = checked_namespace(namespace)
        texts = self._texts(value, index)
        vectors = None
        if self._index is not None and texts:
            plan = self._index.plan(texts, self._stored_vectors)
            made = self._index.embeddings.embed_documents(plan.to_embed) if plan.to_embed else None
            vectors = self._index.finish(plan, made)
        self._write(ns, key, value, vectors)

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
        vectors = None
        if self._index is not None and texts:
            plan = await self._io(self._index.plan, texts, self._stored_vectors)
            made = (
                await aembed_documents(self._index.embeddings, plan.to_embed)
                if plan.to_embed
                else None
            )
            vectors = self._index.finish(plan, made)
        await self._io(self._write, ns, key, value, vectors)

    def search(
        self,
        namespace_prefix: Iterable[str],
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        *,
        query: str | None = None,
    ) -> builtins.list[Item]:
        """Items under ``namespace_prefix`` whose dict value has the ``filter`` fields:
        newest first, or with ``query`` (a store with an index) closest first, each with its
        ``score`` (cosine similarity); ``offset`` skipped, at most ``limit``."""
        prefix = tuple(namespace_prefix)
        if query is None:
            return self._plain_search(prefix, filter, limit, offset)
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
        prefix = tuple(namespace_prefix)
        if query is None:
            return await self._io(self._plain_search, prefix, filter, limit, offset)
        if self._index is None:
            raise no_index(self)
        vector = await self._index.aquery(query)
        return await self._io(self._ranked, prefix, filter, vector, limit, offset)

    def _ranked(
        self,
        prefix: Namespace,
        where: Mapping[str, Any] | None,
        query: Vector,
        limit: int,
        offset: int,
    ) -> builtins.list[Item]:
        assert self._index is not None
        found = ranked(
            self._index.cache,
            query,
            self._candidates(prefix, where),
            limit,
            offset,
            self._stored_vectors,
            _updated_at,
        )
        return [dataclasses.replace(item, score=score) for score, item in found]
