"""The vector math of a store's index.

A vector is kept as ``dims`` float32 numbers (little-endian bytes: ``pack``), at length 1, so
cosine similarity is a dot product. ``VectorCache`` holds vectors by the digest of the text
they embed and scores a query against any of them: with numpy (the ``vectors`` extra) the
cache is one float32 matrix and a search is one matrix-vector product, exact, with the filter
applied before scoring (no approximate index that drops filtered-out neighbours); without
numpy the same results come from plain Python, much slower on large stores
(docs/memory.md gives the figures).
"""

from __future__ import annotations

import hashlib
import math
import operator
import struct
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = ["HAVE_NUMPY", "VectorCache", "digest", "pack", "ranked", "unit", "unit_blob", "unpack"]

try:  # the `vectors` extra
    import numpy

    HAVE_NUMPY = True
except ImportError:  # pragma: no cover - the suite runs with numpy and forces the fallback
    numpy = None  # type: ignore[assignment]
    HAVE_NUMPY = False

Vector = list[float]
Loader = Callable[[list[str]], Mapping[str, bytes]]

_LITTLE = sys.byteorder == "little"


def digest(text: str, model: str = "") -> str:
    """The key of ``text``'s vector by ``model`` (what names the embedder and its dims): 32
    hex digits of their BLAKE2b hash. Items whose texts are the same share one stored
    vector, and a text is embedded once; another model or dims makes other keys, so vectors
    of two embedders are never mixed."""
    data = model.encode("utf-8", "surrogatepass") + b"\0" + text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def pack(vector: Sequence[float]) -> bytes:
    """``vector`` as float32 little-endian bytes."""
    if HAVE_NUMPY:
        return bytes(numpy.asarray(vector, dtype="<f4").tobytes())
    return struct.pack(f"<{len(vector)}f", *vector)


def unpack(blob: bytes) -> Vector:
    """The floats ``pack`` wrote."""
    return list(struct.unpack(f"<{len(blob) // 4}f", blob))


def unit(vector: Sequence[float], dims: int) -> Vector:
    """``vector`` at length 1 (a zero vector as it is); ``ValueError`` unless it has ``dims``
    numbers."""
    if len(vector) != dims:
        raise ValueError(
            f"an embedding has {len(vector)} dimensions, the index's dims is {dims}; make them agree"
        )
    if HAVE_NUMPY:
        array = numpy.asarray(vector, dtype="f8")
        norm = float(numpy.sqrt(array @ array))
        return [float(x) for x in (array / norm if norm else array)]
    floats = [float(x) for x in vector]
    norm = math.sqrt(math.fsum(x * x for x in floats))
    return [x / norm for x in floats] if norm else floats


def unit_blob(vector: Sequence[float], dims: int) -> bytes:
    """``pack(unit(vector, dims))``, without the detour through a list with numpy."""
    if not HAVE_NUMPY:
        return pack(unit(vector, dims))
    if len(vector) != dims:
        unit(vector, dims)  # raises, saying what is wrong
    array = numpy.asarray(vector, dtype="f8")
    norm = float(numpy.sqrt(array @ array))
    return bytes((array / norm if norm else array).astype("<f4").tobytes())


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return float(sum(map(operator.mul, a, b)))


class VectorCache:
    """Vectors by digest, at most ``max_bytes`` of them (the least recently stored go
    first), scored against a query. Thread-safe. ``use_numpy=False`` forces plain Python."""

    def __init__(self, dims: int, *, max_bytes: int = 256 << 20, use_numpy: bool = True) -> None:
        self.dims = dims
        self.capacity = max(1, max_bytes // (4 * dims))
        self.numpy = HAVE_NUMPY and use_numpy
        self._rows: OrderedDict[str, int] = OrderedDict()  # digest -> row, oldest first
        self._lists: dict[int, Vector] = {}  # without numpy: row -> vector
        self._matrix: Any = None  # with numpy: float32 rows, grown by doubling
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    def missing(self, digests: Iterable[str]) -> list[str]:
        """The ``digests`` (once each) whose vectors are not cached."""
        with self._lock:
            return list(dict.fromkeys(d for d in digests if d not in self._rows))

    def add(self, blobs: Mapping[str, bytes]) -> None:
        """Cache the packed vectors ``blobs`` by digest (one already cached stays)."""
        with self._lock:
            self._reserve(len(self._rows) + len(blobs))
            for key, blob in blobs.items():
                if key in self._rows:
                    continue
                if len(blob) != 4 * self.dims:
                    raise ValueError(
                        f"a stored vector has {len(blob) // 4} dimensions, the index's dims is "
                        f"{self.dims}: the store was indexed with other dims; re-put its items"
                    )
                self._rows[key] = row = self._row()
                if self.numpy:
                    self._matrix[row] = numpy.frombuffer(blob, dtype="<f4")
                else:
                    self._lists[row] = unpack(blob)

    def _reserve(self, rows: int) -> None:
        """With numpy: room for ``rows`` rows (at most the capacity), the matrix grown once
        to at least twice its size, so adding many vectors copies it few times."""
        if not self.numpy:
            return
        size = 0 if self._matrix is None else self._matrix.shape[0]
        if rows <= size or size >= self.capacity:
            return
        grown = numpy.zeros((min(self.capacity, max(64, rows, size * 2)), self.dims), "<f4")
        if size:
            grown[:size] = self._matrix
        self._matrix = grown

    def _row(self) -> int:
        used = len(self._rows)
        if used >= self.capacity:
            _, row = self._rows.popitem(last=False)
            return row
        self._reserve(used + 1)
        return used

    def blobs(self, digests: Iterable[str]) -> dict[str, bytes]:
        """The cached vectors of ``digests``, packed."""
        with self._lock:
            found = {}
            for key in digests:
                row = self._rows.get(key)
                if row is not None:
                    found[key] = (
                        bytes(self._matrix[row].tobytes()) if self.numpy else pack(self._lists[row])
                    )
            return found

    def scores(self, query: Sequence[float], digests: Sequence[str]) -> Any:
        """The dot product of ``query`` with each cached vector of ``digests`` (a digest not
        cached scores ``-inf``: callers load what is missing first): a list of floats, or a
        float64 array with numpy."""
        with self._lock:
            rows = [self._rows.get(key, -1) for key in digests]
            if self.numpy:
                return self._numpy_scores(query, rows)
            return [_dot(query, self._lists[row]) if row >= 0 else -math.inf for row in rows]

    def _numpy_scores(self, query: Sequence[float], rows: list[int]) -> Any:
        if not rows:
            return numpy.zeros(0)
        q = numpy.asarray(query, dtype="<f4")
        index = numpy.asarray(rows, dtype=numpy.int64)
        known = numpy.maximum(index, 0)
        used = len(self._rows)
        if len(rows) * 4 >= used:  # most rows wanted: one product over the whole matrix
            found = (self._matrix[:used] @ q)[known]
        else:
            found = self._matrix[known] @ q
        found = numpy.where(index >= 0, found.astype("f8"), -math.inf)
        return found


def ranked(
    cache: VectorCache,
    query: Vector,
    candidates: Sequence[tuple[Any, Sequence[str]]],
    limit: int,
    offset: int,
    load: Loader | None,
    newer: Callable[[Any], Any],
) -> list[tuple[float, Any]]:
    """``candidates`` (each something with the digests of its vectors) closest to ``query``
    first by their best vector (ties: the greater ``newer(candidate)`` first), ``offset``
    skipped, at most ``limit``: (score, candidate) pairs. Vectors not cached are read with
    ``load`` (and cached); a candidate none of whose vectors is found is left out."""
    wanted = [key for _, keys in candidates for key in keys]
    loaded: Mapping[str, bytes] = {}
    missing = cache.missing(wanted)
    if missing and load is not None:
        loaded = load(missing)
        cache.add(loaded)
    scores = cache.scores(query, wanted)
    gone = [at for at in range(len(wanted)) if scores[at] == -math.inf]
    if gone and load is not None:
        # more vectors than the cache holds: those it let go are scored from what was read
        # (read again if they were cached before this search)
        again = [wanted[at] for at in gone if wanted[at] not in loaded]
        found = {**loaded, **(load(list(dict.fromkeys(again))) if again else {})}
        for at in gone:
            if wanted[at] in found:
                scores[at] = _dot(query, unpack(found[wanted[at]]))
    best = _best_of_each(scores, [len(keys) for _, keys in candidates])
    top = _top(best, offset + limit)
    top.sort(key=lambda at: (-best[at], _Reversed(newer(candidates[at][0]))))
    return [(float(best[at]), candidates[at][0]) for at in top[offset : offset + limit]]


class _Reversed:
    """Sorts in the reverse order of what it holds."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: _Reversed) -> bool:
        return bool(other.value < self.value)


def _best_of_each(scores: Sequence[float], counts: list[int]) -> Sequence[float]:
    """The greatest of each run of ``counts`` scores (``-inf`` for an empty run)."""
    if all(count == 1 for count in counts):
        return scores
    best = []
    at = 0
    for count in counts:
        best.append(max(scores[at : at + count], default=-math.inf))
        at += count
    return best


def _top(best: Sequence[float], count: int) -> list[int]:
    """The positions of the ``count`` greatest finite scores, and of any that tie with the
    least of them (so a tie is broken by the caller, not by chance)."""
    if count <= 0:
        return []
    if HAVE_NUMPY and len(best) > 4 * count:
        values = numpy.asarray(best, dtype="f8")
        cut = numpy.partition(values, len(values) - count)[len(values) - count]
        chosen = numpy.flatnonzero(values >= cut)
        return [int(at) for at in chosen if values[at] > -math.inf]
    finite = sorted((at for at in range(len(best)) if best[at] > -math.inf), key=lambda a: -best[a])
    if len(finite) <= count:
        return finite
    cut = best[finite[count - 1]]
    return [at for at in finite if best[at] >= cut]
