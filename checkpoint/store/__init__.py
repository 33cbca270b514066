"""Long-term memory shared across threads: values by namespace and key, found by key, by
their fields (``filter``) or, in a store built with an ``index``, by meaning (``query``).

``MemoryStore`` keeps them in this process, ``SqliteStore`` in a SQLite file and
``checkpoint.RedisStore`` in Redis; all take the same ``index``."""

from __future__ import annotations

from ._index import IndexConfig
from .base import (
    BaseStore,
    IndexedStore,
    Item,
    Namespace,
    NoIndexError,
    checked_namespace,
    listed_namespaces,
    no_index,
    search_page,
)
from .embeddings import Embeddings, HashingEmbeddings, as_embeddings
from .memory import MemoryStore
from .sqlite import SqliteStore

__all__ = [
    "BaseStore",
    "Embeddings",
    "HashingEmbeddings",
    "IndexConfig",
    "IndexedStore",
    "Item",
    "MemoryStore",
    "Namespace",
    "NoIndexError",
    "SqliteStore",
    "as_embeddings",
    "checked_namespace",
    "listed_namespaces",
    "no_index",
    "search_page",
]
