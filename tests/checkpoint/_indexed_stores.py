"""The store backends the semantic-index tests run on: name -> (pytest request) -> a
function ``index -> store`` whose stores are closed when the test ends."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from checkpoint.store import IndexedStore, MemoryStore

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


INDEXED: dict[str, Callable[[pytest.FixtureRequest], MakeStore]] = {
    "memory": _memory,
    "memory-plain-python": _memory_plain_python,
}
