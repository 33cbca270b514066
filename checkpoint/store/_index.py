"""A store's semantic index: which fields of a value are embedded, and the vectors of the
texts embedded so far (``_vectors.VectorCache``, by the digest of each text). A text whose
vector is cached, or which the store already keeps, is not embedded again."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from ._vectors import Loader, Vector, VectorCache, digest, unit, unit_blob
from .embeddings import Embeddings, aembed_query, as_embeddings

__all__ = ["IndexConfig", "Plan", "StoreIndex"]


class IndexConfig(TypedDict, total=False):
    """A store's ``index``: ``dims`` (the vectors' length), ``embed`` (``Embeddings``, or a
    function from a list of texts to a list of vectors) and ``fields`` (the paths of a
    value that are embedded: ``"text"``, ``"profile.bio"``; ``"$"``, the default, is the
    whole value)."""

    dims: int
    embed: Any
    fields: list[str]


@dataclasses.dataclass
class Plan:
    """What ``put`` needs for one value: the digests of its texts, the vectors found
    (cached, or kept by the store) and the texts still to embed."""

    digests: list[str]
    found: dict[str, bytes]
    to_embed: list[str]


class StoreIndex:
    """An ``IndexConfig``, checked, with the cache of vectors by text digest."""

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
        self.cache = VectorCache(dims)
        self.model = model_name(self.embeddings, dims)

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

    def plan(self, texts: list[str], load: Loader | None = None) -> Plan:
        """The vectors of ``texts`` found in the cache, then by ``load`` (the store's own,
        by digest), and the texts left to embed."""
        by_digest = {digest(text, self.model): text for text in texts}
        found = self.cache.blobs(by_digest)
        rest = [key for key in by_digest if key not in found]
        if rest and load is not None:
            kept = load(rest)
            self.cache.add(kept)
            found.update((key, kept[key]) for key in rest if key in kept)
        return Plan(list(by_digest), found, [by_digest[k] for k in by_digest if k not in found])

    def finish(self, plan: Plan, made: Sequence[Sequence[float]] | None) -> dict[str, bytes]:
        """The vectors of ``plan``'s texts by digest, ``made`` being the embeddings of its
        ``to_embed`` (checked, normalised and cached)."""
        if plan.to_embed:
            made = made or []
            if len(made) != len(plan.to_embed):
                raise ValueError(
                    f"the index's embed returned {len(made)} vector(s) for "
                    f"{len(plan.to_embed)} text(s)"
                )
            new = {
                digest(text, self.model): unit_blob(vector, self.dims)
                for text, vector in zip(plan.to_embed, made)
            }
            self.cache.add(new)
            plan.found.update(new)
        return {key: plan.found[key] for key in plan.digests}

    def query(self, text: str) -> Vector:
        return unit(self.embeddings.embed_query(text), self.dims)

    async def aquery(self, text: str) -> Vector:
        return unit(await aembed_query(self.embeddings, text), self.dims)


def model_name(embeddings: Embeddings, dims: int) -> str:
    """What tells the vectors of ``embeddings`` apart from another embedder's, with ``dims``:
    its ``model`` or ``model_name`` where it names one (OpenAIEmbeddings, HashingEmbeddings,
    LangChain's embeddings), else its class or, for a plain function, its qualified name.
    Stores key vectors by it and the text, so a change of model or dims embeds again instead
    of mixing vectors."""
    named = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
    if isinstance(named, str) and named:
        return f"model:{named}/{dims}"
    inner = getattr(embeddings, "embed", None)  # as_embeddings' wrapper of a function
    source = inner if callable(inner) else type(embeddings)
    return f"{getattr(source, '__module__', '')}.{getattr(source, '__qualname__', '')}/{dims}"


def _at(value: Any, path: str) -> Any:
    if path == "$":
        return value
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value
