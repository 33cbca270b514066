"""``SqliteStore``: long-term memory in one SQLite file, with the semantic index.

Tables (``store_`` names, so a ``SqliteSaver`` may share the file):

- ``store_items``: ``ns`` (the namespace's parts, UTF-8, joined by ``\\x1f``; ``\\x1e`` in a
  part written ``\\x1e\\x1e`` and ``\\x1f`` written ``\\x1e\\x1d``: a BLOB, so a namespace
  prefix is a range of the primary key, compared bytewise), ``key`` (UTF-8), ``value``
  (msgpack, ``checkpoint.Serializer``), ``created_at`` and ``updated_at`` (microseconds since
  the epoch) and ``vectors``: the 16-byte digests of the item's vectors, one after another
  (``NULL``: none);
- ``store_vectors``: ``digest`` -> the float32 ``vector`` and ``refs``, how many items use it;
  it goes with the last of them;
- ``store_meta``: ``schema`` -> the version of this layout (``SCHEMA_VERSION``).
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from .._savers.sqlite.lifetime import SqliteFile
from .._savers.sqlite.open import Transaction, connect
from ..errors import CheckpointError
from ..serde import Serializer
from ._index import IndexConfig
from ._vectors import Vector
from .base import (
    Candidate,
    IndexedStore,
    Item,
    Namespace,
    checked_namespace,
    listed_namespaces,
    matcher,
)

__all__ = ["SCHEMA_VERSION", "SqliteStore"]

SCHEMA_VERSION = 1
_TABLES = (
    "CREATE TABLE store_items (ns BLOB NOT NULL, key BLOB NOT NULL, value BLOB NOT NULL, "
    "created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, vectors BLOB, "
    "PRIMARY KEY (ns, key)) WITHOUT ROWID",
    "CREATE INDEX store_items_by_update ON store_items (updated_at)",
    "CREATE TABLE store_vectors (digest BLOB PRIMARY KEY, refs INTEGER NOT NULL, "
    "vector BLOB NOT NULL)",
    "CREATE TABLE store_meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID",
)
_CHUNK = 500  # digests per IN (...) query, well below SQLite's limit on parameters
_DIGEST = 16  # bytes of a vector's digest (_vectors.digest: 32 hex digits)

_SEP, _ESC, _SEP_ESCAPED = b"\x1f", b"\x1e", b"\x1d"
_UNESCAPE = re.compile(b"\x1e(.)", re.DOTALL)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _utf8(text: str) -> bytes:
    # surrogatepass: any Python str round-trips, even one with a lone surrogate
    return text.encode("utf-8", "surrogatepass")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def _encode_ns(ns: Namespace) -> bytes:
    return _SEP.join(
        _utf8(part).replace(_ESC, _ESC + _ESC).replace(_SEP, _ESC + _SEP_ESCAPED) for part in ns
    )


def _decode_ns(data: bytes) -> Namespace:
    if not data:
        return ()
    if len(data) == _DIGEST:
        return (data.hex(),)
    return tuple(
        _text(_UNESCAPE.sub(lambda m: _ESC if m[1] == _ESC else _SEP, part))
        for part in data.split(_SEP)
    )


def _under(prefix: Namespace) -> tuple[str, tuple[Any, ...]]:
    """The SQL condition (and its parameters) of the items in namespaces under ``prefix``:
    the namespace itself, or one that continues it with a separator."""
    if not prefix:
        return "1", ()
    start = _encode_ns(prefix)
    return (
        "ns >= ? AND ns < ? AND (length(ns) = ? OR substr(ns, ?, 1) = x'1f')",
        (start, start + b"\x20", len(start), len(start) + 1),
    )


def _at(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def _digests(data: bytes | None) -> tuple[str, ...]:
    if not data:
        return ()
    if len(data) == _DIGEST:
        return (data.hex(),)
    return tuple(data[at : at + _DIGEST].hex() for at in range(0, len(data), _DIGEST))


def _prepare(path: str) -> Callable[[sqlite3.Connection], None]:
    """The tables of a new file, or a check that an existing one has this store's layout."""

    def prepare(conn: sqlite3.Connection) -> None:
        with Transaction(conn) as db:
            tables = {
                name
                for (name,) in db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN "
                    "('store_items', 'store_vectors', 'store_meta')"
                )
            }
            row = (
                db.execute("SELECT value FROM store_meta WHERE name = 'schema'").fetchone()
                if "store_meta" in tables
                else None
            )
            if row is None and not tables:
                for statement in _TABLES:
                    db.execute(statement)
                db.execute("INSERT INTO store_meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            elif row is None or row[0] != SCHEMA_VERSION:
                if row is None:
                    made = f"by something other than a SqliteStore (it has {sorted(tables)})"
                else:
                    newer = type(row[0]) is int and row[0] > SCHEMA_VERSION
                    made = (
                        f"by {'a newer' if newer else 'an unknown'} version (schema "
                        f"{row[0]!r}; this one reads {SCHEMA_VERSION})"
                    )
                raise CheckpointError(
                    f"SqliteStore cannot use {path!r}: its store tables were made {made}; "
                    "upgrade graph-agent, or pass the path of a store database or of a new file"
                )

    return prepare


class _Filter:
    """A store's ``filter`` as a test of a stored value: the decoded value must match
    (``base.matcher``); a field wanted as a string is first looked for in the msgpack bytes
    (its key and value packed one after the other), so most values that cannot match are
    never decoded."""

    def __init__(self, where: Mapping[str, Any] | None, serializer: Serializer) -> None:
        self.test = matcher(where)
        self.needles: list[bytes] = []
        for key, wanted in (where or {}).items():
            if type(key) is str and type(wanted) is str:
                with contextlib.suppress(CheckpointError):  # unpackable: no shortcut
                    self.needles.append(serializer.dumps(key) + serializer.dumps(wanted))

    def may_match(self, blob: bytes) -> bool:
        for needle in self.needles:  # noqa: SIM110 - a search's hot path
            if needle not in blob:
                return False
        return True


_Held = tuple[bytes, int, bytes, Candidate]  # value bytes, updated_at, digests, the candidate


class _View:
    """The items that have vectors, decoded, as the file was when ``PRAGMA data_version``
    read ``version`` (it changes when another connection commits), with this store's own
    writes since patched in: a search by query filters them in memory instead of reading
    and decoding every item again. When another process has written, the next search reads
    the items again and decodes only those whose stored bytes changed."""

    def __init__(self, limit: int) -> None:
        self.limit = limit  # the most items held; more: no view (the store reads each time)
        self.version: int | None = None
        self.spaces: dict[bytes, dict[bytes, _Held]] = {}

    def refresh(self, db: sqlite3.Connection, loads: Callable[[bytes], Any]) -> bool:
        """Bring the view up to date; ``False`` if the file holds too many items for it."""
        (version,) = db.execute("PRAGMA data_version").fetchone()
        if version == self.version:
            return True
        old, count = self.spaces, 0
        spaces: dict[bytes, dict[bytes, _Held]] = {}
        names: dict[bytes, Namespace] = {}  # each namespace decoded once
        self.version, self.spaces = None, {}
        cursor = db.execute(
            "SELECT ns, key, value, created_at, updated_at, vectors FROM store_items "
            "WHERE vectors IS NOT NULL"
        )
        try:
            for ns, key, blob, created, updated, vectors in cursor:
                count += 1
                if count > self.limit:
                    self.limit = 0  # too big to hold: no view from now on
                    return False
                items = spaces.get(ns)
                if items is None:
                    items = spaces[ns] = {}
                    names[ns] = _decode_ns(ns)
                held = old[ns].get(key) if ns in old else None
                if held is None or held[0] != blob or held[1] != updated or held[2] != vectors:
                    item = Item(names[ns], _text(key), loads(blob), _at(created), _at(updated))
                    held = (blob, updated, vectors, (item, _digests(vectors)))
                items[key] = held
        finally:
            cursor.close()
        self.spaces, self.version = spaces, version
        return True

    def patch(self, ns: bytes, key: bytes, held: _Held | None) -> None:
        """This store's own write of an item (``None``: it has no vectors, or is gone)."""
        if self.version is None:
            return
        if held is not None:
            self.spaces.setdefault(ns, {})[key] = held
        elif key in self.spaces.get(ns, {}):
            del self.spaces[ns][key]
            if not self.spaces[ns]:
                del self.spaces[ns]

    def candidates(
        self, prefix: Namespace, test: Callable[[Any], bool]
    ) -> builtins.list[Candidate]:
        """The items held under ``prefix`` whose value passes ``test``."""
        start = _encode_ns(prefix)
        below = start + _SEP
        found: builtins.list[Candidate] = []
        for ns, items in self.spaces.items():
            if prefix and ns != start and not ns.startswith(below):
                continue
            found.extend(held[3] for held in items.values() if test(held[3][0].value))
        return found


class SqliteStore(IndexedStore, SqliteFile):
    """A store in a SQLite file (WAL mode): items survive restarts, and every process that
    opens the file sees the others' writes. With ``index`` (``IndexConfig``) the named fields
    of each value are embedded on ``put`` and kept in the file with it (a vector once per
    text, however many items share it), so a search by ``query`` in another process, or
    after a restart, reads them instead of embedding again. A ``put`` (the item and its
    vectors) and a ``delete`` are one transaction each; a value that cannot be serialized,
    or an embedding that fails, writes nothing. Values are msgpack (``serializer``, never
    pickle). Safe to share between threads and processes; the async methods run in worker
    threads.

    ``path`` is a file, ``":memory:"``, or (``uri=True``) a ``file:`` URI; ``timeout`` is how
    long a write waits for another connection's lock. Up to ``cache_items`` items that have
    vectors are held decoded between searches by query (0: none), checked against the file
    before each search. Close it with ``close()`` / ``aclose()``, or use it as a (sync or
    async) context manager. Errors name the file; a path whose directory does not exist
    raises ``CheckpointPathError``."""

    _kind = "store"

    def __init__(
        self,
        path: str | Path = "store.sqlite",
        *,
        index: IndexConfig | Mapping[str, Any] | None = None,
        serializer: Serializer | None = None,
        uri: bool = False,
        timeout: float = 30.0,
        cache_items: int = 100_000,
    ) -> None:
        self._closed = True  # until the connection is open (__del__ looks at it)
        if type(cache_items) is not int or cache_items < 0:
            raise ValueError(
                f"SqliteStore(cache_items=...) must be an int >= 0, got {cache_items!r}"
            )
        self.path = str(path)
        self.serializer = serializer or Serializer()
        self.timeout = timeout
        self._set_index(index)
        self._lock = threading.RLock()
        self._view = _View(cache_items)
        self._conn = connect(
            self.path,
            uri=uri,
            timeout=timeout,
            owner="SqliteStore",
            kind="store",
            prepare=_prepare(self.path),
        )
        self._closed = False

    @classmethod
    def from_conn_string(cls, conn_string: str, **options: Any) -> SqliteStore:
        """A store for a path, ``:memory:``, or a ``file:`` URI (``file:db.sqlite?mode=rwc``)."""
        return cls(conn_string, uri=conn_string.startswith("file:"), **options)

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"

    @contextlib.contextmanager
    def _db(self, doing: str) -> Iterator[sqlite3.Connection]:
        """The connection, under the lock (errors name the file and the fix)."""
        with self._using(doing), self._lock:
            yield self._conn

    # -- writing -----------------------------------------------------------------------------

    def _write(
        self, ns: Namespace, key: str, value: Any, vectors: Mapping[str, bytes] | None
    ) -> None:
        # Serialize first: a value that cannot be stored fails before anything is written.
        blob = self.serializer.dumps(value, key=f"{'/'.join(ns)}/{key}")
        new = {bytes.fromhex(d): vector for d, vector in (vectors or {}).items()}
        item = (_encode_ns(ns), _utf8(key))
        digests = b"".join(new) or None
        with self._db(f"writing {key!r} in {ns!r}") as conn:
            with Transaction(conn) as db:
                row = db.execute(
                    "SELECT created_at, vectors FROM store_items WHERE ns = ? AND key = ?", item
                ).fetchone()
                now = time.time_ns() // 1000
                db.execute(
                    "INSERT INTO store_items VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (ns, key) DO "
                    "UPDATE SET value = excluded.value, updated_at = excluded.updated_at, "
                    "vectors = excluded.vectors",
                    (*item, blob, now, now, digests),
                )
                self._relink(db, row[1] if row else None, new)
            held: _Held | None = None
            if digests is not None and self._view.version is not None:
                created = _at(row[0]) if row else _at(now)
                stored = Item(ns, key, self.serializer.loads(blob), created, _at(now))
                held = (blob, now, digests, (stored, _digests(digests)))
            self._view.patch(*item, held)

    @staticmethod
    def _relink(db: sqlite3.Connection, old: bytes | None, new: Mapping[bytes, bytes]) -> None:
        """Count the item's ``new`` vectors in instead of its ``old`` ones (digests, packed):
        a vector no item uses any more is deleted."""
        old = old or b""
        gone = {old[at : at + _DIGEST] for at in range(0, len(old), _DIGEST)}
        added = [(d, vector) for d, vector in new.items() if d not in gone]
        gone -= new.keys()
        db.executemany(
            "INSERT INTO store_vectors VALUES (?, 1, ?) ON CONFLICT (digest) DO UPDATE SET "
            "refs = refs + 1",
            added,
        )
        if gone:
            rows = [(d,) for d in gone]
            db.executemany("UPDATE store_vectors SET refs = refs - 1 WHERE digest = ?", rows)
            db.executemany("DELETE FROM store_vectors WHERE digest = ? AND refs <= 0", rows)

    def delete(self, namespace: Iterable[str], key: str) -> None:
        """Remove the item at ``(namespace, key)`` and the vectors only it used (nothing
        there is no error)."""
        ns = checked_namespace(namespace)
        item = (_encode_ns(ns), _utf8(key))
        with self._db(f"deleting {key!r} in {ns!r}") as conn:
            with Transaction(conn) as db:
                row = db.execute(
                    "DELETE FROM store_items WHERE ns = ? AND key = ? RETURNING vectors", item
                ).fetchone()
                if row is not None:
                    self._relink(db, row[0], {})
            self._view.patch(*item, None)

    # -- reading -----------------------------------------------------------------------------

    def get(self, namespace: Iterable[str], key: str) -> Item | None:
        """The item at ``(namespace, key)``, or ``None``."""
        ns = checked_namespace(namespace)
        with self._db(f"reading {key!r} in {ns!r}") as db:
            row = db.execute(
                "SELECT value, created_at, updated_at FROM store_items WHERE ns = ? AND key = ?",
                (_encode_ns(ns), _utf8(key)),
            ).fetchone()
        if row is None:
            return None
        return Item(ns, key, self.serializer.loads(row[0]), _at(row[1]), _at(row[2]))

    def _stored_vectors(self, digests: builtins.list[str]) -> Mapping[str, bytes]:
        found: dict[str, bytes] = {}
        with self._db("reading vectors") as db:
            for start in range(0, len(digests), _CHUNK):
                chunk = [bytes.fromhex(d) for d in digests[start : start + _CHUNK]]
                found.update(
                    (d.hex(), vector)
                    for d, vector in db.execute(
                        "SELECT digest, vector FROM store_vectors WHERE digest IN "
                        f"({','.join('?' * len(chunk))})",
                        chunk,
                    )
                )
        return found

    @contextlib.contextmanager
    def _rows(self, doing: str, sql: str, parameters: Iterable[Any]) -> Iterator[Iterator[Any]]:
        """The rows of one query (one snapshot of the file), read as they are iterated;
        the query ends with the block however far it was read."""
        with self._db(doing) as db:
            cursor = db.execute(sql, tuple(parameters))
            try:
                yield cursor
            finally:
                cursor.close()

    def _plain_search(
        self, prefix: Namespace, where: Mapping[str, Any] | None, limit: int, offset: int
    ) -> builtins.list[Item]:
        condition, parameters = _under(prefix)
        sql = (
            "SELECT ns, key, value, created_at, updated_at FROM store_items "
            f"WHERE {condition} ORDER BY updated_at DESC"
        )
        if not where:  # every item matches: SQLite pages
            sql += " LIMIT ? OFFSET ?"
            parameters = (*parameters, max(limit, 0), max(offset, 0))
        check, loads = _Filter(where, self.serializer), self.serializer.loads
        found: builtins.list[Item] = []
        skip = max(offset, 0) if where else 0
        with self._rows(f"searching {prefix!r}", sql, parameters) as rows:
            for ns, key, blob, created, updated in rows:
                if len(found) >= limit:
                    break
                if not check.may_match(blob):
                    continue
                value = loads(blob)
                if not check.test(value):
                    continue
                if skip:
                    skip -= 1
                    continue
                found.append(Item(_decode_ns(ns), _text(key), value, _at(created), _at(updated)))
        return found

    def _candidates(
        self, prefix: Namespace, where: Mapping[str, Any] | None
    ) -> builtins.list[Candidate]:
        check, loads = _Filter(where, self.serializer), self.serializer.loads
        with self._db(f"searching {prefix!r} by query") as db:
            if self._view.limit and self._view.refresh(db, loads):
                return self._view.candidates(prefix, check.test)
        condition, parameters = _under(prefix)
        sql = (
            "SELECT ns, key, value, created_at, updated_at, vectors FROM store_items "
            f"WHERE {condition} AND vectors IS NOT NULL"
        )
        spaces: dict[bytes, Namespace] = {}  # each namespace decoded once
        found: builtins.list[Candidate] = []
        with self._rows(f"searching {prefix!r} by query", sql, parameters) as rows:
            for ns, key, blob, created, updated, vectors in rows:
                if not check.may_match(blob):
                    continue
                value = loads(blob)
                if not check.test(value):
                    continue
                space = spaces.get(ns)
                if space is None:
                    space = spaces[ns] = _decode_ns(ns)
                item = Item(space, _text(key), value, _at(created), _at(updated))
                found.append((item, _digests(vectors)))
        return found

    def _ranked(
        self,
        prefix: Namespace,
        where: Mapping[str, Any] | None,
        query: Vector,
        limit: int,
        offset: int,
    ) -> builtins.list[Item]:
        # The values found are the view's: each caller gets its own copy.
        dumps, loads = self.serializer.dumps, self.serializer.loads
        return [
            dataclasses.replace(item, value=loads(dumps(item.value)))
            for item in super()._ranked(prefix, where, query, limit, offset)
        ]

    def list_namespaces(
        self, prefix: Iterable[str] = (), max_depth: int | None = None, limit: int = 100
    ) -> builtins.list[Namespace]:
        """The namespaces under ``prefix`` that hold an item, sorted, cut to ``max_depth``
        parts (once each), at most ``limit``."""
        start = tuple(prefix)
        condition, parameters = _under(start)
        sql = f"SELECT DISTINCT ns FROM store_items WHERE {condition}"
        with self._rows(f"listing namespaces under {start!r}", sql, parameters) as rows:
            spaces = [_decode_ns(ns) for (ns,) in rows]
        return listed_namespaces(spaces, start, max_depth, limit)
