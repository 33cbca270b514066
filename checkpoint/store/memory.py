"""``MemoryStore``: a store in this process's memory."""

from __future__ import annotations

import builtins
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from ._index import IndexConfig
from .base import (
    Candidate,
    IndexedStore,
    Item,
    Namespace,
    checked_namespace,
    listed_namespaces,
    matcher,
    search_page,
    utc_now,
)

__all__ = ["MemoryStore"]


class MemoryStore(IndexedStore):
    """A store in this process's memory (values are kept as given: treat them as read-only).
    With ``index`` (``IndexConfig``), the named fields of each value are embedded when it is
    put, and ``search(..., query=...)`` finds the closest first. Thread-safe."""

    _blocking = False

    def __init__(self, *, index: IndexConfig | Mapping[str, Any] | None = None) -> None:
        self._items: dict[Namespace, dict[str, Item]] = {}
        self._digests: dict[tuple[Namespace, str], tuple[str, ...]] = {}
        self._vectors: dict[str, bytes] = {}  # digest -> packed vector, while an item has it
        self._refs: Counter[str] = Counter()
        self._set_index(index)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemoryStore(namespaces={len(self._items)})"

    def _write(
        self, ns: Namespace, key: str, value: Any, vectors: Mapping[str, bytes] | None
    ) -> None:
        now = utc_now()
        with self._lock:
            bucket = self._items.setdefault(ns, {})
            old = bucket.get(key)
            bucket[key] = Item(ns, key, value, old.created_at if old else now, now)
            self._unlink(ns, key)
            if vectors:
                self._digests[(ns, key)] = tuple(vectors)
                for digest, blob in vectors.items():
                    self._vectors.setdefault(digest, blob)
                    self._refs[digest] += 1

    def _unlink(self, ns: Namespace, key: str) -> None:
        for digest in self._digests.pop((ns, key), ()):
            self._refs[digest] -= 1
            if self._refs[digest] <= 0:
                del self._refs[digest]
                self._vectors.pop(digest, None)

    def _stored_vectors(self, digests: builtins.list[str]) -> Mapping[str, bytes]:
        with self._lock:
            return {d: self._vectors[d] for d in digests if d in self._vectors}

    def get(self, namespace: Iterable[str], key: str) -> Item | None:
        with self._lock:
            return self._items.get(checked_namespace(namespace), {}).get(key)

    def delete(self, namespace: Iterable[str], key: str) -> None:
        ns = checked_namespace(namespace)
        with self._lock:
            self._unlink(ns, key)
            bucket = self._items.get(ns)
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del self._items[ns]

    def _under(self, prefix: Namespace) -> builtins.list[Item]:
        # no order: a search sorts what it returns (by score, or by time)
        size = len(prefix)
        return [
            item
            for ns, bucket in self._items.items()
            if ns[:size] == prefix
            for item in bucket.values()
        ]

    def _plain_search(
        self, prefix: Namespace, where: Mapping[str, Any] | None, limit: int, offset: int
    ) -> builtins.list[Item]:
        with self._lock:
            items = self._under(prefix)
        return search_page(items, where, limit, offset)

    def _candidates(
        self, prefix: Namespace, where: Mapping[str, Any] | None
    ) -> builtins.list[Candidate]:
        test = matcher(where)
        with self._lock:
            digests = self._digests
            return [
                (item, found)
                for item in self._under(prefix)
                if (found := digests.get((item.namespace, item.key))) and test(item.value)
            ]

    def list_namespaces(
        self, prefix: Iterable[str] = (), max_depth: int | None = None, limit: int = 100
    ) -> builtins.list[Namespace]:
        with self._lock:
            return listed_namespaces(self._items, tuple(prefix), max_depth, limit)
