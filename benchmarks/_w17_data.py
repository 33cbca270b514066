"""What both sides of W17 (memory search) store and ask: the same items, the same
embedder, the same queries (benchmarks/WORKLOADS.md, W17). Needs only numpy, which both
venvs have.

- ``ITEMS`` memories in 10 namespaces ``("memories", "user-<n>")``, each
  ``{"text": ..., "kind": "even" | "odd"}``: the filter ``{"kind": "even"}`` matches half;
- ``embed(texts)``: a vector of ``DIMS`` floats per text, from a generator seeded by the
  text's hash (random directions, no model: what is measured is the store, not a model;
  about 25 us a text), as plain lists, as a model client returns them;
- ``QUERIES`` distinct query texts.
"""

from __future__ import annotations

import hashlib

import numpy

DIMS = 1536
ITEMS = 10_000
NAMESPACES = 10
SEARCHES = 100
WARMUP = 5


def item(n: int) -> tuple[tuple[str, str], str, dict[str, str]]:
    """Memory ``n``: its namespace, key and value."""
    value = {"text": f"memory {n}: the customer mentioned topic {n % 97}", "kind": "even" if n % 2 == 0 else "odd"}
    return ("memories", f"user-{n % NAMESPACES}"), f"m{n}", value


def embed(texts: list[str]) -> list[list[float]]:
    vectors = []
    for text in texts:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        vectors.append(numpy.random.default_rng(seed).standard_normal(DIMS, dtype="float32").tolist())
    return vectors


QUERIES = [f"what did the customer say about topic {n}" for n in range(SEARCHES + WARMUP)]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
