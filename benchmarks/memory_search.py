"""W17 (memory search): a store with a semantic index, per backend (ours; LangGraph's side:
benchmarks/peer_memory.py).

    python benchmarks/run.py --only W17

What both sides store and ask is benchmarks/_w17_data.py: 10,000 memories of 1,536
dimensions in 10 namespaces. Per backend:

- ``put_first_us``: a put, its text embedded (the embedder's own ~25 us included);
- ``put_cached_us``: the same 10,000 puts again, their texts unchanged: a store that caches
  embeddings does not call the embedder;
- ``per_op_us`` (median) and ``p99_us`` of ``search(("memories",), query=..., filter={"kind":
  "even"}, limit=10)`` over 100 distinct queries after 5 warm-up searches: all 10,000 under
  the prefix, 5,000 pass the filter;
- ``cold_search_us``: the first search of a new store object on the same data (SQLite,
  Redis: its vectors not yet read into the process).

Backends: ``memory`` (MemoryStore), ``sqlite`` (SqliteStore in a temporary file),
``redis`` (RedisStore on a plain redis-server: vectors scored in the client) when
``BENCH_REDIS_URL`` is set, ``redis_qe`` (RedisStore on a server with the Query Engine) when
``BENCH_REDIS_MODULES_URL`` is set.
"""

from __future__ import annotations

import gc
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from _w17_data import DIMS, QUERIES, WARMUP, embed, item, percentile

INDEX = {"dims": DIMS, "embed": embed, "fields": ["text"]}
FILTER = {"kind": "even"}


@contextmanager
def _memory() -> Iterator[Callable[[], Any]]:
    from checkpoint.store import MemoryStore

    store = MemoryStore(index=INDEX)
    yield lambda: store


@contextmanager
def _sqlite() -> Iterator[Callable[[], Any]]:
    from checkpoint.store import SqliteStore  # type: ignore[attr-defined]

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "store.db")
        opened: list[Any] = []

        def make() -> Any:
            opened.append(SqliteStore(path, index=INDEX))
            return opened[-1]

        try:
            yield make
        finally:
            for store in opened:
                store.close()


def _redis(url_variable: str, **options: Any) -> Callable[[], Any]:
    @contextmanager
    def backend() -> Iterator[Callable[[], Any]]:
        from checkpoint import RedisStore

        prefix = f"w17-{uuid.uuid4().hex[:8]}"
        opened: list[Any] = []

        def make() -> Any:
            url = os.environ[url_variable]
            opened.append(RedisStore.from_url(url, key_prefix=prefix, index=INDEX, **options))
            return opened[-1]

        try:
            yield make
        finally:
            for store in opened:
                store.close()

    return backend


def backends() -> dict[str, Callable[[], Any]]:
    found: dict[str, Callable[[], Any]] = {"memory": _memory, "sqlite": _sqlite}
    if os.environ.get("BENCH_REDIS_URL"):
        found["redis"] = _redis("BENCH_REDIS_URL")
    if os.environ.get("BENCH_REDIS_MODULES_URL"):
        found["redis_qe"] = _redis("BENCH_REDIS_MODULES_URL")
    return found


def _timed_searches(store: Any, queries: list[str]) -> list[float]:
    times = []
    for query in queries:
        start = time.perf_counter()
        found = store.search(("memories",), query=query, filter=FILTER, limit=10)
        times.append(time.perf_counter() - start)
        assert len(found) == 10 and all(i.value["kind"] == "even" for i in found), found
    return times


def w17_store(items: int, emit: Callable[..., None]) -> None:
    """``emit`` is _common.py's. ``items`` below ITEMS is the smoke size."""
    for name, backend in backends().items():
        with backend() as make:
            store = make()
            gc.collect()
            start = time.perf_counter()
            for n in range(items):
                store.put(*item(n))
            first = time.perf_counter() - start
            start = time.perf_counter()
            for n in range(items):
                store.put(*item(n))
            cached = time.perf_counter() - start
            fresh = make() if name != "memory" else store
            start = time.perf_counter()
            _timed_searches(fresh, QUERIES[:1])
            cold = time.perf_counter() - start
            _timed_searches(store, QUERIES[:WARMUP])
            times = _timed_searches(store, QUERIES[WARMUP:])
            emit(
                f"W17_search_{name}",
                len(times),
                sum(times),
                per_op_us=round(statistics.median(times) * 1e6, 1),
                p99_us=round(percentile(times, 0.99) * 1e6, 1),
                cold_search_us=round(cold * 1e6, 1),
                put_first_us=round(first / items * 1e6, 1),
                put_cached_us=round(cached / items * 1e6, 1),
                items=items,
                dims=DIMS,
            )
