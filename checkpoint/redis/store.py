"""Long-term memory in Redis: ``RedisStore``."""

from __future__ import annotations

import builtins
import dataclasses
import re
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from .._savers.closing import Closing
from ..serde import Serializer
from ..store import (
    IndexConfig,
    IndexedStore,
    Item,
    Namespace,
    checked_namespace,
    listed_namespaces,
    search_page,
)
from ..store.base import Candidate, matcher, no_index
from ..store.embeddings import Vector
from ._query_engine import QueryEngine, VectorSearch, filter_query, filter_tokens, ns_tags

__all__ = ["RedisStore"]

# Index members: a namespace's parts joined by _SEP, each part escaped so that _SEP never occurs
# inside one: _ESC is written twice, _SEP as _ESC + _SEP_ESCAPED. A part without either character
# is written as is, so members of namespaces without them read back unchanged.
_SEP = "\x1f"
_ESC = "\x1e"
_SEP_ESCAPED = "\x1d"
_UNESCAPE = re.compile(f"{_ESC}(.)", re.DOTALL)

# The scripts' KEYS: [1] the namespace's hash, [2] the namespace index, [3] the namespace's
# digests (key -> its vectors' digests, concatenated), [4] the vectors (digest -> float32 bytes),
# [5] the reference counts (digest -> how many items use it). A vector comes with its first item
# and goes with its last. Redis does not undo a script that fails half way, so _PUT checks its
# arguments before its first write. The Query Engine's documents of an item (_query_engine.py)
# are named by the item's document prefix and a digest: under the store's hash tag too, so in
# the scripts' slot, but not in KEYS (their names depend on the digests the script reads).
_DIGEST_LEN = 32  # hex digits of a text's digest (checkpoint.store._vectors.digest)

_UNLINK = r"""
local function unlink(old)
  for i = 1, #old, 32 do
    local d = string.sub(old, i, i + 31)
    if redis.call('HINCRBY', KEYS[5], d, -1) <= 0 then
      redis.call('HDEL', KEYS[5], d)
      redis.call('HDEL', KEYS[4], d)
    end
  end
end
"""

# The Query Engine's documents (ARGV[5] the item's document prefix, '' for none: the old ones
# go, and with ARGV[6], the namespace's TAG, the new ones come).
_DOCUMENTS = r"""
local function documents(prefix, old, new, ns, f, first)
  if prefix == '' then return end
  if old then
    for i = 1, #old, 32 do redis.call('DEL', prefix .. string.sub(old, i, i + 31)) end
  end
  if ns == '' then return end
  for i = 1, #new / 32 do
    local name = prefix .. string.sub(new, i * 32 - 31, i * 32)
    redis.call('HSET', name, 'vec', ARGV[first + i - 1], 'ns', ns)
    if f ~= '' then redis.call('HSET', name, 'f', f) end
  end
end
"""

# ARGV[1] key, ARGV[2] record, ARGV[3] the namespace's index member, ARGV[4] the item's digests
# ('' for none), ARGV[5] the item's document prefix, ARGV[6] and ARGV[7] its documents' ns and f
# TAGs, ARGV[8...] the vector of each digest, in order.
_PUT = (
    _UNLINK
    + _DOCUMENTS
    + r"""
local new = ARGV[4]
if #new % 32 ~= 0 or #ARGV ~= 7 + #new / 32 then
  return redis.error_reply('RedisStore put: ' .. #new .. ' digest bytes for ' .. (#ARGV - 7) .. ' vectors')
end
local old = redis.call('HGET', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[3])
documents(ARGV[5], old, new, ARGV[6], ARGV[7], 8)
if old == new or (not old and new == '') then return 1 end
for i = 1, #new / 32 do
  local d = string.sub(new, i * 32 - 31, i * 32)
  if redis.call('HINCRBY', KEYS[5], d, 1) == 1 then redis.call('HSET', KEYS[4], d, ARGV[7 + i]) end
end
if old then unlink(old) end
if new == '' then redis.call('HDEL', KEYS[3], ARGV[1]) else redis.call('HSET', KEYS[3], ARGV[1], new) end
return 1
"""
)

# ARGV[1] key, ARGV[2] the namespace's index member, ARGV[3] the item's document prefix. The
# index entry goes with the namespace's last key (and a stray entry of an empty namespace goes
# too); the item's vectors and documents as for _PUT.
_DELETE = (
    _UNLINK
    + _DOCUMENTS
    + r"""
redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('ZREM', KEYS[2], ARGV[2]) end
local old = redis.call('HGET', KEYS[3], ARGV[1])
if old then
  redis.call('HDEL', KEYS[3], ARGV[1])
  documents(ARGV[3], old, '', '', '', 0)
  unlink(old)
end
return 1
"""
)

# reindex: the documents of one item, unless it changed since it was read. ARGV[1] key,
# ARGV[2] the record read, ARGV[3] its digests, ARGV[4...6] as _PUT's ARGV[5...7], ARGV[7...] the
# vectors.
_REINDEX = (
    _DOCUMENTS
    + r"""
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
if redis.call('HGET', KEYS[3], ARGV[1]) ~= ARGV[3] then return 0 end
documents(ARGV[4], ARGV[3], ARGV[3], ARGV[5], ARGV[6], 7)
return 1
"""
)

# Replies per pipeline: a search's reads go in batches of this many namespaces (two hashes
# each) or vectors, one round trip per batch, so no reply grows without bound.
_NAMESPACES_PER_TRIP = 64
_VECTORS_PER_COMMAND = 512


def _utf8(text: str) -> bytes:
    # surrogatepass: any Python str round-trips, even one with lone surrogates.
    return text.encode("utf-8", "surrogatepass")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def _member(ns: Namespace) -> bytes:
    """The namespace's member in the index: escaped parts joined by ``\\x1f``."""
    return _utf8(
        _SEP.join(p.replace(_ESC, _ESC + _ESC).replace(_SEP, _ESC + _SEP_ESCAPED) for p in ns)
    )


def _from_member(member: bytes) -> Namespace:
    return tuple(
        _UNESCAPE.sub(lambda m: _ESC if m[1] == _ESC else _SEP, part)
        for part in _text(member).split(_SEP)
    )


def _store_tag(key_prefix: str) -> str:
    """The hash tag every key of a store shares: ``{<prefix>:store}``. A prefix with a brace
    (which would cut the tag short, or leave it empty) is written as ``{`` plus its hex form,
    which no prefix without braces can produce."""
    if "{" in key_prefix or "}" in key_prefix:
        return "{{" + _utf8(key_prefix).hex() + ":store}"
    return "{" + key_prefix + ":store}"


class RedisStore(IndexedStore, Closing):
    """A store in Redis. Every key of a store shares the hash tag ``{<prefix>:store}``:

    - ``{<prefix>:store}:ns:<part>:<part>...``: a hash per namespace, key -> msgpack record
      ``{"v": value, "t": [created, updated]}`` (parts percent-encoded, so no two namespaces
      share a key);
    - ``{<prefix>:store}:namespaces``: a sorted set (all scores 0) of the namespaces that hold
      an item, for ``search`` and ``list_namespaces``: their parts joined by ``\\x1f``, with
      ``\\x1e`` in a part written ``\\x1e\\x1e`` and ``\\x1f`` written ``\\x1e\\x1d``;
    - with an ``index``: ``{<prefix>:store}:digests:<part>...``, a hash per namespace, key ->
      the digests of the item's vectors (32 hex digits each, concatenated), and
      ``{<prefix>:store}:vectors`` (digest -> float32 bytes) with ``{<prefix>:store}:refs``
      (digest -> how many items use it): items sharing a text share one vector.

    ``put`` and ``delete`` are one Lua script each, writing a namespace's hash, the index and
    the item's vectors together. A search by ``query`` reads the records and digests of the
    namespaces under the prefix, and the vectors this process has not read yet, and scores
    them in the client: it works on every Redis (7, Valkey, Cluster), with no module. On
    Redis Cluster the shared tag puts a whole store in one slot (so one node).

    Where the server has the Query Engine (Redis 8; Redis Stack), a store with an ``index``
    searches there instead (``vector_search="auto"``, the default; ``"server"`` insists,
    ``"client"`` never does): the same scripts also keep a document per item and text under
    ``{<prefix>:store}:doc:`` in the vector index ``{<prefix>:store}:vector-index`` (made on
    first use), and a search is one ``FT.SEARCH`` with the filter applied first
    (``checkpoint/redis/_query_engine.py``; a filter on values other than JSON-like data, a
    datetime say, is applied in the client). Items put before (or by a store with
    ``vector_search="client"``) are found on the server after ``reindex()``. A cluster client
    always searches in the client."""

    def __init__(
        self,
        client: Any,
        *,
        key_prefix: str = "graph_agent",
        serializer: Serializer | None = None,
        index: IndexConfig | Mapping[str, Any] | None = None,
        vector_search: VectorSearch = "auto",
    ) -> None:
        self.client = client
        self.key_prefix = key_prefix
        self.serializer = serializer or Serializer()
        self._owns_client = False  # from_url made it: close() closes it
        self._tag = _store_tag(key_prefix)
        self._set_index(index)
        self._engine = (
            QueryEngine(client, self._tag, self._index.dims, vector_search)
            if self._index is not None
            else QueryEngine.check_mode(vector_search)
        )
        self._put_script = client.register_script(_PUT)
        self._delete_script = client.register_script(_DELETE)
        self._reindex_script = client.register_script(_REINDEX)
        self._legacy_checked = False

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        cluster: bool = False,
        socket_timeout: float | None = 5.0,
        socket_connect_timeout: float | None = 5.0,
        **options: Any,
    ) -> RedisStore:
        """A store on a new client for ``url`` (``redis.RedisCluster`` if ``cluster``); the
        store owns the client and ``close`` closes it. The timeouts bound every wait, as for
        ``RedisSaver.from_url`` (the URL's own ``?socket_timeout=`` wins); ``options`` go to
        ``RedisStore`` (``key_prefix``, ``serializer``, ``index``, ``vector_search``)."""
        import redis

        timeouts = {
            "socket_timeout": socket_timeout,
            "socket_connect_timeout": socket_connect_timeout,
        }
        client = (
            redis.RedisCluster.from_url(url, **timeouts)
            if cluster
            else redis.Redis.from_url(url, **timeouts)
        )
        try:
            store = cls(client, **options)
        except BaseException:
            client.close()  # a bad option (an index without dims ...) leaves nothing open
            raise
        store._owns_client = True
        return store

    def close(self) -> None:
        """Close the client ``from_url`` made (a client passed in stays open). Safe to call
        twice."""
        if self._owns_client:
            self.client.close()

    def __repr__(self) -> str:
        return f"RedisStore(key_prefix={self.key_prefix!r})"

    def _parts(self, ns: Namespace) -> str:
        return ":".join(quote(p, safe="", errors="surrogatepass") for p in ns)

    def _key(self, ns: Namespace) -> str:
        return f"{self._tag}:ns:{self._parts(ns)}"

    @property
    def _namespaces_key(self) -> str:
        return f"{self._tag}:namespaces"

    @property
    def _vectors_key(self) -> str:
        return f"{self._tag}:vectors"

    def _script_keys(self, ns: Namespace) -> builtins.list[str]:
        """The KEYS of ``_PUT`` and ``_DELETE`` for an item of ``ns``."""
        tag = self._tag
        return [
            self._key(ns),
            self._namespaces_key,
            f"{tag}:digests:{self._parts(ns)}",
            self._vectors_key,
            f"{tag}:refs",
        ]

    def _item(self, ns: Namespace, key: str, blob: bytes) -> Item:
        return _record_item(ns, key, self.serializer.loads(blob))

    # -- the layout of graph-agent 0.1 -----------------------------------------------------------

    @property
    def _legacy_index(self) -> str:
        return f"{self.key_prefix}:store-namespaces"

    def _legacy_key(self, ns: Namespace) -> str:
        return f"{self.key_prefix}:store:" + ":".join(quote(p, safe="") for p in ns)

    def _check_legacy(self) -> None:
        """Once per store: warn when items of the old layout wait to be moved; in the same
        round trip, a store with an index asks whether the server has the Query Engine."""
        if self._legacy_checked:
            return
        self._legacy_checked = True
        engine = self._engine
        listed = None
        if engine is not None and engine.undecided:
            pipe = self.client.pipeline(transaction=False)
            pipe.exists(self._legacy_index).execute_command("FT._LIST")
            legacy, listed = pipe.execute(raise_on_error=False)
            if isinstance(legacy, BaseException):
                raise legacy
        else:
            legacy = self.client.exists(self._legacy_index)
        if legacy:
            warnings.warn(
                f"Redis holds RedisStore items under key prefix {self.key_prefix!r} in the "
                "layout of graph-agent 0.1, which this store does not read: call "
                "store.migrate_legacy_keys() once to move them (docs/redis.md, RedisStore)",
                UserWarning,
                stacklevel=3,
            )
        if engine is not None and listed is not None:
            engine.decide(listed)

    def migrate_legacy_keys(self) -> int:
        """Move the items that a ``RedisStore`` of graph-agent 0.1 wrote under this key
        prefix (hashes ``<prefix>:store:<parts>``, index ``<prefix>:store-namespaces``) into
        this layout, records unchanged (values, ``created_at``, ``updated_at``); returns how
        many moved. An item this layout already holds wins over its old copy. Each old
        namespace is deleted once its items are moved, so the call can be interrupted and run
        again; a second run moves nothing. Moved items are not in searches by ``query``
        until they are put again (they have no vectors)."""
        self._legacy_checked = True
        moved = 0
        for name in self.client.zrange(self._legacy_index, 0, -1):
            ns = tuple(name.decode().split(_SEP))
            old_key, new_key = self._legacy_key(ns), self._key(ns)
            for key, blob in self.client.hgetall(old_key).items():
                if not self.client.hexists(new_key, key):
                    args = [key, blob, _member(ns), b"", b"", b"", b""]
                    self._put_script(keys=self._script_keys(ns), args=args)
                    moved += 1
            self.client.delete(old_key)
            self.client.zrem(self._legacy_index, name)
        return moved

    # -- the store's methods ----------------------------------------------------------------------

    def _write(
        self, ns: Namespace, key: str, value: Any, vectors: Mapping[str, bytes] | None
    ) -> None:
        self._check_legacy()
        now = time.time()
        old = self.client.hget(self._key(ns), _utf8(key))
        created = self.serializer.loads(old)["t"][0] if old else now
        blob = self.serializer.dumps({"v": value, "t": [created, now]}, key=f"{'/'.join(ns)}/{key}")
        digests = "".join(vectors) if vectors else ""
        assert len(digests) == _DIGEST_LEN * len(vectors or ())
        self._put_script(
            keys=self._script_keys(ns),
            args=[
                _utf8(key), blob, _member(ns), digests,
                *self._documents(ns, key, value if vectors else None),
                *(vectors or {}).values(),
            ],
        )  # fmt: skip

    def _documents(self, ns: Namespace, key: str, value: Any) -> builtins.list[str]:
        """The scripts' arguments for an item's Query Engine documents: its document prefix
        ('' where there are none: no index, or a cluster client), and, where the server
        searches and the item has vectors (``value`` not None), its namespace and filter
        TAGs."""
        engine = self._engine
        if engine is None or not engine.documents:
            return ["", "", ""]
        prefix = engine.item_prefix(self._parts(ns), key)
        if value is None or not engine.usable():
            return [prefix, "", ""]
        return [prefix, ",".join(ns_tags(ns)), ",".join(filter_tokens(value))]

    def get(self, namespace: Iterable[str], key: str) -> Item | None:
        """The item at ``(namespace, key)``, or None."""
        ns = checked_namespace(namespace)
        self._check_legacy()
        blob = self.client.hget(self._key(ns), _utf8(key))
        return None if blob is None else self._item(ns, key, blob)

    def delete(self, namespace: Iterable[str], key: str) -> None:
        """Remove the item at ``(namespace, key)``, and its vectors unless another item uses
        them (nothing there is no error)."""
        ns = checked_namespace(namespace)
        args = [_utf8(key), _member(ns), self._documents(ns, key, None)[0]]
        self._delete_script(keys=self._script_keys(ns), args=args)

    def _namespaces(self, prefix: Namespace) -> builtins.list[Namespace]:
        self._check_legacy()
        if prefix:
            # Bytewise bounds: 0xff never occurs in UTF-8, so it sorts after every member that
            # continues the prefix (whose parts never hold the separator), whatever follows.
            start = _member(prefix)
            names = self.client.zrangebylex(
                self._namespaces_key, b"[" + start, b"[" + start + _utf8(_SEP) + b"\xff"
            )
        else:
            names = self.client.zrange(self._namespaces_key, 0, -1)
        found = [_from_member(n) for n in names]
        return [ns for ns in found if ns[: len(prefix)] == prefix]

    def _hashes(
        self, prefix: Namespace, digests: bool
    ) -> Iterator[tuple[Namespace, dict[bytes, bytes], dict[bytes, bytes]]]:
        """Each namespace under ``prefix`` with its records and (if ``digests``) its
        digests hash, read in pipelines of ``_NAMESPACES_PER_TRIP`` namespaces."""
        names = self._namespaces(prefix)
        for at in range(0, len(names), _NAMESPACES_PER_TRIP):
            batch = names[at : at + _NAMESPACES_PER_TRIP]
            pipe = self.client.pipeline(transaction=False)
            for ns in batch:
                if digests:  # before the records: an item put meanwhile has its record read
                    pipe.hgetall(f"{self._tag}:digests:{self._parts(ns)}")
                pipe.hgetall(self._key(ns))
            replies = pipe.execute()
            if not digests:
                yield from ((ns, records, {}) for ns, records in zip(batch, replies))
                continue
            yield from zip(batch, replies[1::2], replies[0::2])

    def _plain_search(
        self, prefix: Namespace, where: Mapping[str, Any] | None, limit: int, offset: int
    ) -> builtins.list[Item]:
        items = [
            self._item(ns, _text(key), blob)
            for ns, records, _ in self._hashes(prefix, digests=False)
            for key, blob in records.items()
        ]
        return search_page(items, where, limit, offset)

    def _candidates(
        self, prefix: Namespace, where: Mapping[str, Any] | None
    ) -> builtins.list[Candidate]:
        # A search's hot path, once per item under the prefix: no call that can be saved.
        test = matcher(where)
        loads = self.serializer.loads
        stamp, utc = datetime.fromtimestamp, timezone.utc
        found: builtins.list[Candidate] = []
        for ns, records, digests in self._hashes(prefix, digests=True):
            for key, joined in digests.items():
                blob = records.get(key)
                if blob is None:
                    continue
                record = loads(blob)
                value = record["v"]
                if test(value):
                    created, updated = record["t"]
                    item = Item(ns, _text(key), value, stamp(created, utc), stamp(updated, utc))
                    found.append((item, _split_digests(joined)))
        return found

    def _ranked(
        self,
        prefix: Namespace,
        where: Mapping[str, Any] | None,
        query: Vector,
        limit: int,
        offset: int,
    ) -> builtins.list[Item]:
        self._check_legacy()  # which asks the server whether it has the Query Engine
        engine = self._engine
        if engine is not None and engine.usable():
            pre_filter = filter_query(prefix, where)
            hits = None if pre_filter is None else engine.search(pre_filter, query, offset + limit)
            if hits is not None:
                return self._scored(hits, where)[offset : offset + limit]
        return super()._ranked(prefix, where, query, limit, offset)

    def _scored(
        self, hits: builtins.list[tuple[Namespace, str, float]], where: Mapping[str, Any] | None
    ) -> builtins.list[Item]:
        """The items of a search on the server, read in pipelines, with their scores: the
        closest first, ties newest first (as the client ranks them). An item deleted or
        changed since, so that it no longer matches ``where``, is left out."""
        test = matcher(where)
        found: builtins.list[Item] = []
        for at in range(0, len(hits), _VECTORS_PER_COMMAND):
            batch = hits[at : at + _VECTORS_PER_COMMAND]
            pipe = self.client.pipeline(transaction=False)
            for ns, key, _ in batch:
                pipe.hget(self._key(ns), _utf8(key))
            for (ns, key, score), blob in zip(batch, pipe.execute()):
                if blob is not None:
                    item = self._item(ns, key, blob)
                    if test(item.value):
                        found.append(dataclasses.replace(item, score=score))
        found.sort(key=lambda item: item.updated_at, reverse=True)
        found.sort(key=lambda item: item.score or 0.0, reverse=True)  # stable: ties newest first
        return found

    def reindex(self) -> int:
        """Write the Query Engine's documents of every item that has vectors (those put
        before the server's index existed, or by a store with ``vector_search="client"``),
        so that a search on the server finds them; returns how many items it indexed. An
        item changed meanwhile is left as its own ``put`` wrote it. Safe to run again."""
        engine = self._engine
        if engine is None or self._index is None:
            raise no_index(self)
        if not engine.usable():
            raise RuntimeError(
                "reindex() writes the documents of the server's vector index, and this store "
                "searches in the client (no Query Engine on the server, a cluster client, or "
                "vector_search='client'): there is nothing to reindex"
            )
        indexed = 0
        for ns, records, digests in self._hashes((), digests=True):
            found = [
                (k, records[k], d, _split_digests(d)) for k, d in digests.items() if k in records
            ]
            for at in range(0, len(found), _VECTORS_PER_COMMAND):  # bounded pipelines
                indexed += self._reindex_items(ns, found[at : at + _VECTORS_PER_COMMAND])
        return indexed

    def _reindex_items(
        self, ns: Namespace, items: builtins.list[tuple[bytes, bytes, bytes, tuple[str, ...]]]
    ) -> int:
        """``reindex`` for some items of ``ns`` (key, record, digests, split): one pipeline."""
        vectors = self._stored_vectors([d for *_, split in items for d in split])
        pipe = self.client.pipeline(transaction=False)
        for key, blob, joined, split in items:
            blobs = [vectors.get(d) for d in split]
            if any(v is None for v in blobs):
                continue  # deleted meanwhile
            documents = self._documents(ns, _text(key), self.serializer.loads(blob)["v"])
            self._reindex_script(
                keys=self._script_keys(ns),
                args=[key, blob, joined, *documents, *blobs],
                client=pipe,
            )
        return sum(int(done) for done in pipe.execute())

    def _stored_vectors(self, digests: builtins.list[str]) -> Mapping[str, bytes]:
        if not digests:
            return {}
        pipe = self.client.pipeline(transaction=False)
        batches = [
            digests[at : at + _VECTORS_PER_COMMAND]
            for at in range(0, len(digests), _VECTORS_PER_COMMAND)
        ]
        for batch in batches:
            pipe.hmget(self._vectors_key, batch)
        return {
            key: blob
            for batch, blobs in zip(batches, pipe.execute())
            for key, blob in zip(batch, blobs)
            if blob is not None
        }

    def list_namespaces(
        self, prefix: Iterable[str] = (), max_depth: int | None = None, limit: int = 100
    ) -> builtins.list[Namespace]:
        """The namespaces under ``prefix`` that hold an item, sorted, cut to ``max_depth``
        parts, at most ``limit``."""
        return listed_namespaces(self._namespaces(tuple(prefix)), tuple(prefix), max_depth, limit)


def _split_digests(joined: bytes) -> tuple[str, ...]:
    """The digests an item's entry in a digests hash holds (one, most often)."""
    text = joined.decode("ascii")
    if len(text) == _DIGEST_LEN:
        return (text,)
    return tuple(text[i : i + _DIGEST_LEN] for i in range(0, len(text), _DIGEST_LEN))


def _record_item(ns: Namespace, key: str, record: Mapping[str, Any]) -> Item:
    created, updated = (datetime.fromtimestamp(t, tz=timezone.utc) for t in record["t"])
    return Item(ns, key, record["v"], created, updated)
