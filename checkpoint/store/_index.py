"""A store's semantic index: which fields of a value are embedded, the vectors kept for
each item, and how a query scores them (cosine similarity: vectors are kept at length 1, so
a score is a dot product). Vectors of a text already embedded are not computed again."""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from .embeddings import Embeddings, aembed_documents, aembed_query, as_embeddings

__all__ = ["IndexConfig", "StoreIndex"]

Vector = list[float]

CACHE_SIZE = 10_000  # texts whose vectors are kept, least recently used first out


class IndexConfig(TypedDict, total=False):
    """A store's ``index``: ``dims`` (the vectors' length), ``embed`` (``Embeddings``, or a
    function from a list of texts to a list of vectors) and ``fields`` (the paths of a
    value that are embedded: ``"text"``, ``"profile.bio"``; ``"$"``, the default, is the
    whole value)."""

    dims: int
    embed: Any
    fields: list[str]


class StoreIndex:
    """An ``IndexConfig``, checked, with the cache of vectors by text."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        if not isinstance(config, Mapping):
            raise TypeError(
                f"index must be a dict such as {{'dims': 256, 'embed': ..., 'fields': "
                f"['text']}}, got {type(config).__name__}"
            )
        unknown = sorted(set(config) - {"dims", "embed", "fields"})
        if unknown:
            raise ValueError(f"index has unknown key(s) {unknown}; it takes dims, embed, fields")
        dims = config.get("dims")
        if not isinstance(dims, int) or isinstance(dims, bool) or dims < 1:
            raise ValueError(
                f"index['dims'] must be a positive int (the vectors' length), got {dims!r}"
            )
        if "embed" not in config:
            raise ValueError(
                "index needs 'embed': an Embeddings object or a function texts -> vectors"
            )
        fields = config.get("fields", ["$"])
        if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
            raise ValueError(
                f"index['fields'] must be a list of paths such as ['text'], got {fields!r}"
            )
        self.dims = dims
        self.embeddings: Embeddings = as_embeddings(config["embed"])
        self.fields = list(fields)
        self._cache: OrderedDict[bytes, Vector] = OrderedDict()
        self._lock = threading.Lock()

    def texts(self, value: Any, fields: Sequence[str] | None = None) -> list[str]:
        """The texts of ``value`` at ``fields`` (the index's, by default): a string as it is,
        anything else as JSON; a path the value does not have gives none."""
        found = []
        for path in fields if fields is not None else self.fields:
            part = _at(value, path)
            if part is not None:
                found.append(
                    part if isinstance(part, str) else json.dumps(part, sort_keys=True, default=str)
                )
        return found

    def _cached(self, texts: Iterable[str]) -> tuple[list[Vector | None], list[bytes]]:
        keys = [hashlib.sha256(t.encode()).digest() for t in texts]
        with self._lock:
            found = []
            for key in keys:
                vector = self._cache.get(key)
                if vector is not None:
                    self._cache.move_to_end(key)
                found.append(vector)
        return found, keys

    def _keep(self, keys: list[bytes], vectors: list[Vector]) -> None:
        with self._lock:
            for key, vector in zip(keys, vectors):
                self._cache[key] = vector
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)

    def _checked(self, made: Sequence[Sequence[float]], count: int) -> list[Vector]:
        if len(made) != count:
            raise ValueError(
                f"the index's embed returned {len(made)} vector(s) for {count} text(s)"
            )
        return [unit(v, self.dims) for v in made]

    def vectors(self, texts: list[str]) -> list[Vector]:
        """The vectors of ``texts``, those not cached embedded in one call."""
        found, keys = self._cached(texts)
        missing = [i for i, v in enumerate(found) if v is None]
        if missing:
            made = self._checked(
                self.embeddings.embed_documents([texts[i] for i in missing]), len(missing)
            )
            self._keep([keys[i] for i in missing], made)
            for i, vector in zip(missing, made):
                found[i] = vector
        return [v for v in found if v is not None]

    async def avectors(self, texts: list[str]) -> list[Vector]:
        found, keys = self._cached(texts)
        missing = [i for i, v in enumerate(found) if v is None]
        if missing:
            made = self._checked(
                await aembed_documents(self.embeddings, [texts[i] for i in missing]), len(missing)
            )
            self._keep([keys[i] for i in missing], made)
            for i, vector in zip(missing, made):
                found[i] = vector
        return [v for v in found if v is not None]

    def query(self, text: str) -> Vector:
        return unit(self.embeddings.embed_query(text), self.dims)

    async def aquery(self, text: str) -> Vector:
        return unit(await aembed_query(self.embeddings, text), self.dims)


def _at(value: Any, path: str) -> Any:
    if path == "$":
        return value
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def unit(vector: Sequence[float], dims: int) -> Vector:
    """``vector`` at length 1 (a zero vector as it is); ``ValueError`` unless it has ``dims``
    numbers."""
    if len(vector) != dims:
        raise ValueError(
            f"an embedding has {len(vector)} dimensions, the index's dims is {dims}; make them agree"
        )
    floats = [float(x) for x in vector]
    norm = math.sqrt(sum(x * x for x in floats))
    return [x / norm for x in floats] if norm else floats


def best_score(query: Vector, vectors: Sequence[Vector]) -> float:
    """The best cosine similarity of ``query`` with any of an item's ``vectors``."""
    return max(sum(a * b for a, b in zip(query, v)) for v in vectors)
