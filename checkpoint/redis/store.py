"""Long-term memory in Redis: ``RedisStore``."""

from __future__ import annotations

import builtins
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
from ..store.base import Candidate, matcher

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
# arguments before its first write.
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

# ARGV[1] key, ARGV[2] record, ARGV[3] the namespace's index member, ARGV[4] the item's digests
# ('' for none), ARGV[5...] the vector of each digest, in order.
_PUT = (
    _UNLINK
    + r"""
local new = ARGV[4]
if #new % 32 ~= 0 or #ARGV ~= 4 + #new / 32 then
  return redis.error_reply('RedisStore put: ' .. #new .. ' digest bytes for ' .. (#ARGV - 4) .. ' vectors')
end
local old = redis.call('HGET', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[3])
if old == new or (not old and new == '') then return 1 end
for i = 1, #new / 32 do
  local d = string.sub(new, i * 32 - 31, i * 32)
  if redis.call('HINCRBY', KEYS[5], d, 1) == 1 then redis.call('HSET', KEYS[4], d, ARGV[4 + i]) end
end
if old then unlink(old) end
if new == '' then redis.call('HDEL', KEYS[3], ARGV[1]) else redis.call('HSET', KEYS[3], ARGV[1], new) end
return 1
"""
)

# ARGV[1] key, ARGV[2] the namespace's index member. The index entry goes with the namespace's
# last key (and a stray entry of an empty namespace goes too); the item's vectors as for _PUT.
_DELETE = (
    _UNLINK
    + r"""
redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('ZREM', KEYS[2], ARGV[2]) end
local old = redis.call('HGET', KEYS[3], ARGV[1])
if old then
  redis.call('HDEL', KEYS[3], ARGV[1])
  unlink(old)
end
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
    Redis Cluster the shared tag puts a whole store in one slot (so one node)."""

    def __init__(
        self,
        client: Any,
        *,
        key_prefix: str = "graph_agent",
        serializer: Serializer | None = None,
        index: IndexConfig | Mapping[str, Any] | None = None,
    ) -> None:
        self.client = client
        self.key_prefix = key_prefix
        self.serializer = serializer or Serializer()
        self._owns_client = False  # from_url made it: close() closes it
        self._tag = _store_tag(key_prefix)
        self._set_index(index)
        self._put_script = client.register_script(_PUT)
        self._delete_script = client.register_script(_DELETE)
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
        ``RedisStore`` (``key_prefix``, ``serializer``, ``index``)."""
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
        """Once per store: warn when items of the old layout wait to be moved."""
        if self._legacy_checked:
            return
        self._legacy_checked = True
        if self.client.exists(self._legacy_index):
            warnings.warn(
                f"Redis holds RedisStore items under key prefix {self.key_prefix!r} in the "
                "layout of graph-agent 0.1, which this store does not read: call "
                "store.migrate_legacy_keys() once to move them (docs/redis.md, RedisStore)",
                UserWarning,
                stacklevel=3,
            )

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
                    self._put_script(keys=self._script_keys(ns), args=[key, blob, _member(ns), b""])
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
            args=[_utf8(key), blob, _member(ns), digests, *(vectors or {}).values()],
        )

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
        self._delete_script(keys=self._script_keys(ns), args=[_utf8(key), _member(ns)])

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
