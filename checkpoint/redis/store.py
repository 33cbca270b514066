"""Long-term memory in Redis: ``RedisStore``."""

from __future__ import annotations

import builtins
import re
import time
import warnings
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from .._savers.closing import Closing
from ..serde import Serializer
from ..store import (
    BaseStore,
    Item,
    Namespace,
    checked_namespace,
    listed_namespaces,
    no_index,
    search_page,
)

__all__ = ["RedisStore"]

# Index members: a namespace's parts joined by _SEP, each part escaped so that _SEP never occurs
# inside one: _ESC is written twice, _SEP as _ESC + _SEP_ESCAPED. A part without either character
# is written as is, so members of namespaces without them read back unchanged.
_SEP = "\x1f"
_ESC = "\x1e"
_SEP_ESCAPED = "\x1d"
_UNESCAPE = re.compile(f"{_ESC}(.)", re.DOTALL)

# KEYS[1] the namespace's hash, KEYS[2] the namespace index; ARGV[1] key, ARGV[2] record,
# ARGV[3] the namespace's index member. Both writes or neither.
_PUT = r"""
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[3])
return 1
"""

# KEYS as for _PUT; ARGV[1] key, ARGV[2] the namespace's index member. The index entry goes
# with the namespace's last key (and a stray entry of an empty namespace goes too).
_DELETE = r"""
redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('ZREM', KEYS[2], ARGV[2]) end
return 1
"""


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


class RedisStore(BaseStore, Closing):
    """A store in Redis. Every key of a store shares the hash tag ``{<prefix>:store}``:

    - ``{<prefix>:store}:ns:<part>:<part>...``: a hash per namespace, key -> msgpack record
      ``{"v": value, "t": [created, updated]}`` (parts percent-encoded, so no two namespaces
      share a key);
    - ``{<prefix>:store}:namespaces``: a sorted set (all scores 0) of the namespaces that hold
      an item, for ``search`` and ``list_namespaces``: their parts joined by ``\\x1f``, with
      ``\\x1e`` in a part written ``\\x1e\\x1e`` and ``\\x1f`` written ``\\x1e\\x1d``.

    ``put`` and ``delete`` are one Lua script each, writing a namespace's hash and the index
    together. On Redis Cluster the shared tag puts a whole store in one slot (so one node);
    works on plain Redis 7 and Valkey too."""

    def __init__(
        self, client: Any, *, key_prefix: str = "graph_agent", serializer: Serializer | None = None
    ) -> None:
        self.client = client
        self.key_prefix = key_prefix
        self.serializer = serializer or Serializer()
        self._owns_client = False  # from_url made it: close() closes it
        self._tag = _store_tag(key_prefix)
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
        ``RedisStore``."""
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
        store = cls(client, **options)
        store._owns_client = True
        return store

    def close(self) -> None:
        """Close the client ``from_url`` made (a client passed in stays open). Safe to call
        twice."""
        if self._owns_client:
            self.client.close()

    def __repr__(self) -> str:
        return f"RedisStore(key_prefix={self.key_prefix!r})"

    def _key(self, ns: Namespace) -> str:
        parts = ":".join(quote(p, safe="", errors="surrogatepass") for p in ns)
        return f"{self._tag}:ns:{parts}"

    @property
    def _index(self) -> str:
        return f"{self._tag}:namespaces"

    def _item(self, ns: Namespace, key: str, blob: bytes) -> Item:
        record = self.serializer.loads(blob)
        created, updated = (datetime.fromtimestamp(t, tz=timezone.utc) for t in record["t"])
        return Item(ns, key, record["v"], created, updated)

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
        again; a second run moves nothing."""
        self._legacy_checked = True
        moved = 0
        for name in self.client.zrange(self._legacy_index, 0, -1):
            ns = tuple(name.decode().split(_SEP))
            old_key, new_key = self._legacy_key(ns), self._key(ns)
            for key, blob in self.client.hgetall(old_key).items():
                if not self.client.hexists(new_key, key):
                    self._put_script(keys=[new_key, self._index], args=[key, blob, _member(ns)])
                    moved += 1
            self.client.delete(old_key)
            self.client.zrem(self._legacy_index, name)
        return moved

    # -- the store's methods ----------------------------------------------------------------------

    def put(
        self,
        namespace: Iterable[str],
        key: str,
        value: Any,
        *,
        index: bool | builtins.list[str] | None = None,
    ) -> None:
        """Store ``value`` under ``(namespace, key)``; an update keeps ``created_at``. (This
        store has no semantic index yet: ``index`` changes nothing.)"""
        ns = checked_namespace(namespace)
        self._check_legacy()
        now = time.time()
        old = self.client.hget(self._key(ns), _utf8(key))
        created = self.serializer.loads(old)["t"][0] if old else now
        blob = self.serializer.dumps({"v": value, "t": [created, now]}, key=f"{'/'.join(ns)}/{key}")
        self._put_script(keys=[self._key(ns), self._index], args=[_utf8(key), blob, _member(ns)])

    def get(self, namespace: Iterable[str], key: str) -> Item | None:
        """The item at ``(namespace, key)``, or None."""
        ns = checked_namespace(namespace)
        self._check_legacy()
        blob = self.client.hget(self._key(ns), _utf8(key))
        return None if blob is None else self._item(ns, key, blob)

    def delete(self, namespace: Iterable[str], key: str) -> None:
        """Remove the item at ``(namespace, key)`` (nothing there is no error)."""
        ns = checked_namespace(namespace)
        self._delete_script(keys=[self._key(ns), self._index], args=[_utf8(key), _member(ns)])

    def _namespaces(self, prefix: Namespace) -> builtins.list[Namespace]:
        self._check_legacy()
        if prefix:
            # Bytewise bounds: 0xff never occurs in UTF-8, so it sorts after every member that
            # continues the prefix (whose parts never hold the separator), whatever follows.
            start = _member(prefix)
            names = self.client.zrangebylex(
                self._index, b"[" + start, b"[" + start + _utf8(_SEP) + b"\xff"
            )
        else:
            names = self.client.zrange(self._index, 0, -1)
        found = [_from_member(n) for n in names]
        return [ns for ns in found if ns[: len(prefix)] == prefix]

    def search(
        self,
        namespace_prefix: Iterable[str],
        filter: Mapping[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        *,
        query: str | None = None,
    ) -> builtins.list[Item]:
        """Items under ``namespace_prefix`` whose dict value has the ``filter`` fields, newest
        update first, ``offset`` skipped, at most ``limit``. (A search by ``query`` needs an
        index, which this store does not have yet: a ``ValueError`` says so.)"""
        if query is not None:
            raise no_index(self)
        items = [
            self._item(ns, _text(key), blob)
            for ns in self._namespaces(tuple(namespace_prefix))
            for key, blob in self.client.hgetall(self._key(ns)).items()
        ]
        return search_page(items, filter, limit, offset)

    def list_namespaces(
        self, prefix: Iterable[str] = (), max_depth: int | None = None, limit: int = 100
    ) -> builtins.list[Namespace]:
        """The namespaces under ``prefix`` that hold an item, sorted, cut to ``max_depth``
        parts, at most ``limit``."""
        return listed_namespaces(self._namespaces(tuple(prefix)), tuple(prefix), max_depth, limit)
