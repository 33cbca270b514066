#!/usr/bin/env python3
"""LangGraph's side of W17 (memory search; ours: benchmarks/memory_search.py).

    .venv-peer/bin/python benchmarks/peer_memory.py [--out FILE] [--redis-modules URL] [--items N]

The same items, embedder and queries as ours (benchmarks/_w17_data.py), in LangGraph's
``InMemoryStore(index=...)`` and, given a Redis with RediSearch + RedisJSON
(``--redis-modules``), ``langgraph-checkpoint-redis``'s ``RedisStore(index=...)``. The same
figures as ours: ``put_first_us``, ``put_cached_us`` (LangGraph's stores embed a put's text
again even when it has not changed: ``embed_calls`` counts them), ``short_results`` (the
searches that returned fewer than ``limit`` items though 5,000 pass the filter), the median (``per_op_us``)
and 99th percentile of 100 filtered searches after 5 warm-up ones, ``cold_search_us``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _w17_data import DIMS, ITEMS, QUERIES, WARMUP, embed, item, percentile

FILTER = {"kind": "even"}
calls = {"texts": 0}


def counted_embed(texts: list[str]) -> list[list[float]]:
    calls["texts"] += len(texts)
    return embed(texts)


INDEX: dict[str, Any] = {"dims": DIMS, "embed": counted_embed, "fields": ["text"]}


short = {"searches": 0}


def searches(store: Any, queries: list[str]) -> list[float]:
    """Times of the searches; a search that returns fewer than 10 items though 5,000 pass
    the filter is counted in ``short`` (LangGraph's RedisStore filters after its KNN)."""
    times = []
    for query in queries:
        start = time.perf_counter()
        found = store.search(("memories",), query=query, filter=FILTER, limit=10)
        times.append(time.perf_counter() - start)
        assert all(i.value["kind"] == "even" for i in found), found
        short["searches"] += len(found) < 10
    return times


def measure(name: str, store: Any, fresh: Any, items: int) -> dict[str, Any]:
    calls["texts"] = short["searches"] = 0
    start = time.perf_counter()
    for n in range(items):
        store.put(*item(n))
    first = time.perf_counter() - start
    start = time.perf_counter()
    for n in range(items):
        store.put(*item(n))
    cached = time.perf_counter() - start
    embedded = calls["texts"]
    start = time.perf_counter()
    searches(fresh if fresh is not None else store, QUERIES[:1])
    cold = time.perf_counter() - start
    searches(store, QUERIES[:WARMUP])
    times = searches(store, QUERIES[WARMUP:])
    return {
        "workload": f"W17_search_{name}",
        "n": len(times),
        "seconds": round(sum(times), 6),
        "per_op_us": round(statistics.median(times) * 1e6, 1),
        "p99_us": round(percentile(times, 0.99) * 1e6, 1),
        "cold_search_us": round(cold * 1e6, 1),
        "put_first_us": round(first / items * 1e6, 1),
        "put_cached_us": round(cached / items * 1e6, 1),
        "embed_calls": embedded,
        "short_results": short["searches"],
        "items": items,
        "dims": DIMS,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description="LangGraph's W17")
    ap.add_argument("--out")
    ap.add_argument("--redis-modules", default="")
    ap.add_argument("--items", type=int, default=ITEMS)
    args = ap.parse_args()
    from langgraph.store.memory import InMemoryStore

    records = [measure("memory", InMemoryStore(index=INDEX), None, args.items)]
    if args.redis_modules:
        from langgraph.store.redis import RedisStore

        prefix = f"w17{uuid.uuid4().hex[:6]}"
        options = {"index": INDEX, "store_prefix": prefix, "vector_prefix": prefix + "_vectors"}
        with RedisStore.from_conn_string(args.redis_modules, **options) as store:
            store.setup()
            with RedisStore.from_conn_string(args.redis_modules, **options) as fresh:
                records.append(measure("redis_qe", store, fresh, args.items))
    lines = "".join(json.dumps(r) + "\n" for r in records)
    if args.out:
        with open(args.out, "a") as out:
            out.write(lines)
    print(lines, end="")


if __name__ == "__main__":
    main()
