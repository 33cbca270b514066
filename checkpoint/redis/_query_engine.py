"""A ``RedisStore``'s search by meaning on the server: the Query Engine (Redis 8, Redis Stack's
RediSearch 2.4+, which is the same engine) keeps a vector index of the store's items, and a
search is one ``FT.SEARCH`` with a KNN clause and the filter as a pre-filter.

The index, ``{tag}:vector-index``, covers the hashes under ``{tag}:doc:`` (``{tag}`` being
the store's hash tag): one *document* per (item, embedded text), named
``{tag}:doc:<namespace parts>/<key>/<digest>`` (parts and key percent-encoded, so the name
reads back), with three fields:

- ``vec``: the text's vector, float32, at length 1;
- ``ns``: a TAG of the item's namespace prefixes (``("a",)``, ``("a", "b")``, ...), each as a
  digest (``ns_tags``), so ``search(("a",), ...)`` is ``@ns:{<digest of ("a",)>}``;
- ``f``: a TAG of what a ``filter`` may ask of the value (``filter_tokens``): for each top-level
  field, a digest of (key, canonical value) and one saying the field holds something other
  than ``None``, and one saying the value is a dict.

The index is ``FLAT`` (brute force) with ``DISTANCE_METRIC IP``: FLAT is exact, so the server
returns what the client-side scoring returns (the same items, order and scores), with the
filter applied before the vectors are compared (an HNSW graph searched with a selective filter
can miss neighbours), and nothing to build on ``put``; HNSW would pay off only far beyond the
sizes a store's namespace holds (at 10,000 vectors of 1,536 dimensions a FLAT search takes a
few milliseconds, docs/redis.md). Vectors are stored at length 1, so the inner product is the
cosine similarity and ``IP`` skips normalising on every comparison (the score is
``1 - distance``; a zero vector scores 0, as in the client).

Equality as Python sees it (``value.get(k) == v``) is kept exactly: numbers are compared as
exact fractions (``1 == 1.0 == True`` share a token, ``0.1`` and ``Decimal("0.1")`` do not),
dicts and sets whatever their order, lists and tuples apart, ``NaN`` equal to nothing. A filter
value ``None`` matches a missing key too: it becomes "is a dict, and not (this field holds
something)". A filter with a value of any other type (a datetime, a model ...) has no token:
``filter_query`` returns ``None`` and the store filters in the client for that search.
"""

from __future__ import annotations

import hashlib
import math
import struct
import threading
import warnings
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Literal
from urllib.parse import quote, unquote

from ..store import Namespace

__all__ = [
    "VECTOR_SEARCH_MODES",
    "QueryEngine",
    "VectorSearch",
    "filter_query",
    "filter_tokens",
    "ns_tags",
]

VectorSearch = Literal["auto", "server", "client"]
VECTOR_SEARCH_MODES = ("auto", "server", "client")

_DIGEST_BYTES = 16
_DISTANCE = "__distance"
# KNN asks for this many documents per item wanted at first (an item has one per text), and
# four times as many each time that was not enough.
_FIRST_K_PER_ITEM = 2
_K_GROWTH = 4


# -- what a filter may ask, as TAG tokens -----------------------------------------------------


def _number(numerator: int, denominator: int) -> bytes:
    return b"#%d/%d" % (numerator, denominator)


def _canonical(value: Any) -> bytes | None:
    """``value`` as bytes such that two values get the same bytes exactly when they are
    ``==`` in Python (for the types handled here); ``None`` for anything else, or a value
    holding ``NaN`` (equal to nothing)."""
    if value is None:
        return b"n"
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")
        return b"s%d:%s" % (len(data), data)
    if isinstance(value, (bytes, bytearray)):
        return b"b%d:%s" % (len(value), bytes(value))
    if isinstance(value, int):  # bool and int enums too: True == 1
        return _number(int(value), 1)
    if isinstance(value, (float, Decimal)):
        if value.is_nan() if isinstance(value, Decimal) else math.isnan(value):
            return None  # quiet or signalling: equal to nothing
        if math.isinf(value):
            return b"#+inf" if value > 0 else b"#-inf"
        return _number(*value.as_integer_ratio())
    if isinstance(value, Mapping):
        pairs = []
        for key, item in value.items():
            k, v = _canonical(key), _canonical(item)
            if k is None or v is None:
                return None
            pairs.append(k + v)
        return b"{" + b"".join(sorted(pairs)) + b"}"
    if isinstance(value, (list, tuple, set, frozenset)):
        parts = []
        for item in value:
            part = _canonical(item)
            if part is None:
                return None
            parts.append(part)
        if isinstance(value, list):
            return b"[" + b"".join(parts) + b"]"
        if isinstance(value, tuple):
            return b"(" + b"".join(parts) + b")"
        return b"<" + b"".join(sorted(parts)) + b">"  # a set equals a frozenset
    return None


def _token(kind: bytes, *parts: bytes) -> str:
    return hashlib.blake2b(kind + b"".join(parts), digest_size=_DIGEST_BYTES).hexdigest()


_IS_DICT = _token(b"d")


def filter_tokens(value: Any) -> list[str]:
    """The ``f`` tokens of a document of ``value``: none unless it is a dict; else "is a
    dict", and per top-level field "holds something" (unless ``None``) and "equals this"."""
    if not isinstance(value, Mapping):
        return []
    tokens = [_IS_DICT]
    for key, item in value.items():
        k = _canonical(key)
        if k is None or item is None:
            continue  # a key with no token is filtered in the client (filter_query: None)
        tokens.append(_token(b"h", k))
        v = _canonical(item)
        if v is not None:
            tokens.append(_token(b"v", k, v))
    return tokens


def ns_tags(ns: Namespace) -> list[str]:
    """The ``ns`` tokens of a document of an item in ``ns``: one per prefix of it."""
    return [_token(b"p", _canonical(ns[:depth]) or b"") for depth in range(1, len(ns) + 1)]


def filter_query(prefix: Namespace, where: Mapping[str, Any] | None) -> str | None:
    """The pre-filter of a search under ``prefix`` with ``where`` (``"*"``: everything), or
    ``None`` where ``where`` holds a value with no token (the store filters in the client)."""
    clauses = [f"@ns:{{{ns_tags(prefix)[-1]}}}"] if prefix else []
    negative = False
    for key, wanted in (where or {}).items():
        k = _canonical(key)
        if k is None:
            return None
        if wanted is None:  # a missing key matches too: the field holds nothing but None
            clauses.append(f"-@f:{{{_token(b'h', k)}}}")
            negative = True
            continue
        v = _canonical(wanted)
        if v is None:
            return None
        clauses.append(f"@f:{{{_token(b'v', k, v)}}}")
    if negative:
        clauses.insert(0, f"@f:{{{_IS_DICT}}}")
    return f"({' '.join(clauses)})" if clauses else "*"


# -- the index and its search ---------------------------------------------------------------


def _is_cluster(client: Any) -> bool:
    return hasattr(client, "get_nodes") and hasattr(client, "nodes_manager")


def _fields(reply: Any) -> dict[str, Any]:
    """A reply of name/value pairs (RESP2: a flat list; RESP3: a map) as a dict by str name."""
    if isinstance(reply, Mapping):
        pairs = list(reply.items())
    else:
        pairs = list(zip(reply[::2], reply[1::2]))
    return {(k.decode() if isinstance(k, bytes) else str(k)): v for k, v in pairs}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class QueryEngine:
    """The server side of one store's index: whether to use it (``vector_search``: ``"auto"``
    asks the server once, ``"server"`` insists, ``"client"`` never does), the index itself
    (made on first use, by whichever process comes first), the documents' fields and the
    search. Thread-safe."""

    def __init__(self, client: Any, tag: str, dims: int, mode: VectorSearch) -> None:
        if mode not in VECTOR_SEARCH_MODES:
            QueryEngine.check_mode(mode)
        self.client = client
        # a cluster client never searches on the server, so it writes and clears no document
        self.documents = not _is_cluster(client)
        self.dims = dims
        self.mode = mode
        self.name = f"{tag}:vector-index"
        self.doc_prefix = f"{tag}:doc:"
        self._usable: bool | None = None if mode != "client" else False
        self._lock = threading.Lock()

    @staticmethod
    def check_mode(mode: str) -> None:
        """For a store without an index: ``mode`` is a known one that needs no index."""
        if mode not in VECTOR_SEARCH_MODES:
            raise ValueError(
                f"vector_search must be one of {', '.join(map(repr, VECTOR_SEARCH_MODES))}, "
                f"got {mode!r}"
            )
        if mode == "server":
            raise ValueError(
                "vector_search='server' searches the store's index on the server, and this "
                "store has no index: build it with index={'dims': ..., 'embed': ...}"
            )

    # -- whether the server has it ------------------------------------------------------------

    def usable(self) -> bool:
        """Whether this store searches on the server: asked once (and the index made, or
        checked, then); ``vector_search="server"`` raises where it cannot."""
        if self._usable is None:
            self.decide(None)
        assert self._usable is not None
        return self._usable

    @property
    def undecided(self) -> bool:
        """Whether ``usable`` would ask the server ``FT._LIST``: the store may ask it along
        with another command and hand the reply to ``decide``."""
        return self._usable is None and self.documents

    def decide(self, listed: Any) -> None:
        """Settle ``usable`` given ``listed``, the reply to ``FT._LIST`` (an error for a
        server without the Query Engine), or ``None`` to ask."""
        with self._lock:
            if self._usable is None:
                self._usable = self._detect(listed)

    def _detect(self, listed: Any) -> bool:
        import redis

        if _is_cluster(self.client):
            return self._without("the client is a cluster client (RedisCluster)", warn=False)
        if listed is None:
            try:
                listed = self.client.execute_command("FT._LIST")
            except redis.ResponseError as error:
                listed = error
        if isinstance(listed, redis.ResponseError):
            return self._without(f"it has no Query Engine (FT._LIST: {listed})", warn=False)
        if isinstance(listed, BaseException):
            raise listed
        try:
            self._create()
        except redis.ResponseError as error:
            return self._without(f"it refused the vector index (FT.CREATE: {error})", warn=True)
        return True

    def _without(self, why: str, *, warn: bool) -> bool:
        """No search on the server: an error under ``"server"``; under ``"auto"`` the client
        searches (a warning when the server has a Query Engine that refused the index)."""
        if self.mode == "server":
            raise RuntimeError(
                f"RedisStore(vector_search='server') cannot search on this server: {why}; "
                "use a server with the Query Engine (Redis 8, Redis Stack) and a client that "
                "is not a cluster client, or vector_search='auto' (which searches in the "
                "client where the server cannot)"
            )
        if warn:
            warnings.warn(
                f"RedisStore searches by query in the client: the server {why}",
                RuntimeWarning,
                stacklevel=2,
            )
        return False

    def _create(self) -> None:
        """Make the index, or check the one another process made: same dimensions."""
        import redis

        try:
            self.client.execute_command(
                "FT.CREATE", self.name, "ON", "HASH", "PREFIX", "1", self.doc_prefix,
                "SCHEMA", "vec", "VECTOR", "FLAT", "6", "TYPE", "FLOAT32", "DIM", str(self.dims),
                "DISTANCE_METRIC", "IP", "ns", "TAG", "f", "TAG",
            )  # fmt: skip
            return
        except redis.ResponseError as error:
            if "already exists" not in str(error).lower():
                raise
        dims = self._index_dims()
        if dims != self.dims:
            raise ValueError(
                f"the Redis vector index {self.name!r} holds vectors of {dims} dimensions, but "
                f"this store's index has dims={self.dims}: a store's items are all embedded "
                f"alike. Build the store with dims={dims} and the embedder that made them; for "
                "another embedder, use a key_prefix of its own, or drop this index "
                f"(FT.DROPINDEX {self.name}, which keeps the items) and put every item again "
                "with the new embedder"
            )

    def _index_dims(self) -> int | None:
        info = _fields(self.client.execute_command("FT.INFO", self.name))
        for attribute in info.get("attributes", []):
            found = _fields(attribute) if isinstance(attribute, (list, Mapping)) else {}
            if _text(found.get("attribute", b"")) == "vec":
                dim = found.get("dim")
                return int(dim) if dim is not None else None
        return None

    # -- documents ----------------------------------------------------------------------------

    def item_prefix(self, parts: str, key: str) -> str:
        """The start of the names of an item's documents (each ends with a digest);
        ``parts``: the namespace's percent-encoded parts joined by ``:``."""
        return f"{self.doc_prefix}{parts}/{quote(key, safe='', errors='surrogatepass')}/"

    def item_of(self, document: bytes | str) -> tuple[Namespace, str]:
        """The (namespace, key) of a document's name."""
        name = _text(document) if isinstance(document, bytes) else document
        parts, key, _ = name[len(self.doc_prefix) :].rsplit("/", 2)
        ns = tuple(unquote(p, errors="surrogatepass") for p in parts.split(":"))
        return ns, unquote(key, errors="surrogatepass")

    def num_docs(self) -> int:
        """How many documents the index holds (``FT.INFO``'s ``num_docs``)."""
        return int(_fields(self.client.execute_command("FT.INFO", self.name))["num_docs"])

    # -- the search ---------------------------------------------------------------------------

    def search(
        self, query: str, vector: Sequence[float], want: int
    ) -> list[tuple[Namespace, str, float]] | None:
        """The items whose documents match the pre-filter ``query`` (``filter_query``), the
        closest first by their best document, as (namespace, key, score): at least the
        ``want`` best and every item tied with the last of them (the caller breaks ties), or
        all there are (fewer). An index dropped meanwhile is made again (its documents are indexed
        again in the background); a search the server refuses is an error under
        ``"server"``, and under ``"auto"`` ``None``: the store searches in the client from
        then on, with a warning."""
        import redis

        if want <= 0:
            return []
        try:
            return self._search(query, vector, want)
        except redis.ResponseError as error:
            said = str(error).lower()
            if "unknown index" in said or "no such index" in said:
                self._create()
                return self._search(query, vector, want)
            if self.mode != "auto":
                raise
            with self._lock:
                self._usable = self._without(f"refused a search (FT.SEARCH: {error})", warn=True)
            return None

    def _search(
        self, query: str, vector: Sequence[float], want: int
    ) -> list[tuple[Namespace, str, float]]:
        blob = struct.pack(f"<{len(vector)}f", *vector)
        k = max(8, want * _FIRST_K_PER_ITEM)
        while True:
            hits = self._knn(query, blob, k)
            best: dict[tuple[Namespace, str], float] = {}
            for document, distance in hits:
                best.setdefault(self.item_of(document), distance)
            if len(hits) < k:
                break  # every matching document came back
            ranked = list(best.values())  # in the order of the hits: the closest first
            if len(ranked) >= want and hits[-1][1] > ranked[want - 1]:
                break  # the documents not read are farther than the last item wanted
            k *= _K_GROWTH
        ranked = list(best.values())
        cut = ranked[want - 1] if len(ranked) >= want else math.inf
        return [
            (ns, key, 1.0 - distance) for (ns, key), distance in best.items() if distance <= cut
        ]

    def _knn(self, query: str, blob: bytes, k: int) -> list[tuple[bytes, float]]:
        reply = self.client.execute_command(
            "FT.SEARCH", self.name, f"{query}=>[KNN $K @vec $B AS {_DISTANCE}]",
            "PARAMS", "4", "K", str(k), "B", blob, "SORTBY", _DISTANCE,
            "RETURN", "1", _DISTANCE, "LIMIT", "0", str(k), "DIALECT", "2", "TIMEOUT", "0",
        )  # fmt: skip
        return _hits(reply)


def _hits(reply: Any) -> list[tuple[bytes, float]]:
    """(document name, distance) of an ``FT.SEARCH`` reply, RESP2 or RESP3."""
    if isinstance(reply, Mapping):  # RESP3: {"results": [{"id", "extra_attributes"}, ...]}
        found = []
        for result in _fields(reply)["results"]:
            fields = _fields(result)
            attributes = _fields(fields.get("extra_attributes") or {})
            found.append((fields["id"], float(attributes[_DISTANCE])))
        return found
    return [  # RESP2: [total, name, [field, value, ...], name, [...], ...]
        (name, float(_fields(values)[_DISTANCE])) for name, values in zip(reply[1::2], reply[2::2])
    ]
