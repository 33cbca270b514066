"""What turns text into vectors for a store's semantic search.

``Embeddings`` is the protocol (LangChain's shape, which LangGraph's stores take too):
``embed_documents(texts)`` and ``embed_query(text)``, with async twins. A store's ``index``
takes such an object or a plain function from a list of texts to a list of vectors
(``as_embeddings`` wraps it). ``HashingEmbeddings`` is a deterministic embedder that needs no
model, no download and no key: texts that share words score higher, for tests, examples and
the demo; it does not understand meaning (use a real model for that).
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import itertools
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["Embeddings", "HashingEmbeddings", "as_embeddings"]

Vector = list[float]


@runtime_checkable
class Embeddings(Protocol):
    """Text to vectors: one per document, and one for a search's query."""

    def embed_documents(self, texts: list[str]) -> list[Vector]: ...

    def embed_query(self, text: str) -> Vector: ...


class _FunctionEmbeddings:
    """A plain function ``texts -> vectors`` (sync or async) as ``Embeddings``."""

    def __init__(self, embed: Callable[[list[str]], Any]) -> None:
        self.embed = embed
        self.is_async = inspect.iscoroutinefunction(embed)

    def __repr__(self) -> str:
        return f"as_embeddings({getattr(self.embed, '__name__', self.embed)!r})"

    def embed_documents(self, texts: list[str]) -> list[Vector]:
        if self.is_async:
            raise TypeError(
                f"embed function {self.embed!r} is async; use the store's async methods "
                "(aput, asearch), or give a sync function"
            )
        return _vectors(self.embed(texts), len(texts), self.embed)

    def embed_query(self, text: str) -> Vector:
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[Vector]:
        if self.is_async:
            made = self.embed(texts)
            assert isinstance(made, Awaitable)
            return _vectors(await made, len(texts), self.embed)
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> Vector:
        return (await self.aembed_documents([text]))[0]


def _vectors(made: Any, count: int, source: object) -> list[Vector]:
    if not isinstance(made, Sequence) or len(made) != count:
        raise ValueError(
            f"embed {source!r} returned {type(made).__name__} for {count} text(s); it must "
            "return one vector (a list of floats) per text, in order"
        )
    return [[float(x) for x in vector] for vector in made]


def as_embeddings(embed: Embeddings | Callable[[list[str]], Any]) -> Embeddings:
    """``embed`` as ``Embeddings``: an object with ``embed_documents`` and ``embed_query`` as
    it is, a function from a list of texts to a list of vectors wrapped. ``TypeError`` for
    anything else, saying what is taken."""
    if callable(getattr(embed, "embed_documents", None)) and callable(
        getattr(embed, "embed_query", None)
    ):
        return embed  # type: ignore[return-value]
    if callable(embed):
        return _FunctionEmbeddings(embed)
    raise TypeError(
        f"embed must be an Embeddings object (embed_documents, embed_query) or a function "
        f"from a list of texts to a list of vectors, got {type(embed).__name__}"
    )


async def aembed_documents(embeddings: Embeddings, texts: list[str]) -> list[Vector]:
    """``embeddings``' vectors of ``texts``, awaited: its own async method when it has one,
    else its sync one in a worker thread."""
    method = getattr(embeddings, "aembed_documents", None)
    if method is not None:
        return list(await method(texts))
    return await asyncio.to_thread(embeddings.embed_documents, texts)


async def aembed_query(embeddings: Embeddings, text: str) -> Vector:
    method = getattr(embeddings, "aembed_query", None)
    if method is not None:
        return list(await method(text))
    return await asyncio.to_thread(embeddings.embed_query, text)


_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbeddings:
    """A deterministic embedder with no model: each lower-cased word (and each pair of
    neighbouring words) adds to one of ``dims`` slots picked by a hash, signed by another
    bit of it; the vector has length 1. Texts sharing words point the same way, so a store's
    search finds them; synonyms do not. The same text always gives the same vector, in any
    process."""

    model = "graph-agent-hashing-v1"  # what a store keys its vectors by, with the dims

    def __init__(self, dims: int = 256) -> None:
        if not isinstance(dims, int) or isinstance(dims, bool) or dims < 8:
            raise ValueError(f"HashingEmbeddings(dims=...) takes an int of 8 or more, got {dims!r}")
        self.dims = dims

    def __repr__(self) -> str:
        return f"HashingEmbeddings(dims={self.dims})"

    def _vector(self, text: str) -> Vector:
        words = _WORD.findall(text.lower())
        vector = [0.0] * self.dims
        for feature in (*words, *(f"{a} {b}" for a, b in itertools.pairwise(words))):
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            slot = int.from_bytes(digest[:4], "little") % self.dims
            vector[slot] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector

    def embed_documents(self, texts: list[str]) -> list[Vector]:
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> Vector:
        return self._vector(text)
