"""A saver in one SQLite file (stdlib ``sqlite3``): threads survive restarts.

It follows ``checkpoint/_savers/retention.py``'s rules (write order, head, retention) and
stores checkpoints as ``checkpoint/_savers/index.py`` describes, here in SQL: the ``seq``
column is the write order, ``_write`` the ``put``, ``_savers/sqlite/prune.py`` the retention.
"""

from __future__ import annotations

import builtins
import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ._savers.head import CachedHead, HeadCache
from ._savers.head_read import (
    HeadRead,
    HeldHeadChangedError,
    MissingValuesError,
    UndecodableError,
    head_checkpoint,
    remember_write,
)
from ._savers.history import Decoded
from ._savers.index import (
    LIST,
    VALUE,
    EncodedPut,
    Index,
    checkpoint_from,
    encode_put,
    header_of,
    list_ref,
    value_ref,
)
from ._savers.leases import check_fence
from ._savers.sqlite import leases as sqlite_leases
from ._savers.sqlite.lifetime import SqliteFile
from ._savers.sqlite.open import Transaction, connect
from ._savers.sqlite.prune import prune
from .base import BaseCheckpointSaver, Checkpoint, CheckpointDelta
from .errors import CheckpointConflictError, CheckpointError, CheckpointNotFoundError
from .serde import Serializer

__all__ = ["SqliteSaver"]

_COLUMNS = "checkpoint_id, parent_id, step, header, idx"
_CHUNK = 500  # ids per IN (...) query, well below SQLite's limit on parameters
Row = tuple[str, "str | None", int, bytes, bytes]


class _Blobs:
    """The stored bytes some checkpoints' values are made of, read in one transaction."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], bytes] = {}  # (checkpoint id, key) -> value
        self.lists: dict[int, list[bytes]] = {}  # list number -> its items, as far as needed


class SqliteSaver(SqliteFile, sqlite_leases.SqliteLeases, BaseCheckpointSaver):
    """Checkpoints in a SQLite file (WAL mode), written incrementally: a step is one
    transaction that stores its delta (new list items, changed values) and a small index,
    and moves the thread's head only if it is still the writer's parent
    (``CheckpointConflictError`` otherwise, with nothing written). Reading a checkpoint costs
    a fixed number of queries however long the thread, all in one read transaction, so a
    read sees one consistent state even while another process writes and prunes the thread.
    Safe to share between threads and processes; the async methods run in worker threads.

    "Latest", the order of ``list`` and retention follow the order in which checkpoints were
    written to their thread (a number each write takes in its transaction), never the clock
    in their ids. ``max_retained`` keeps only the newest writes of each thread (the
    conversation itself is kept: list items are shared by every checkpoint that reaches them).
    ``_savers.retention`` states these rules for every saver.

    Leases (``BaseCheckpointSaver``) are kept in a table of their own in the same file and
    expire by the wall clock (the processes sharing the file are on one machine); a fenced
    write checks the lease in its own transaction.

    Close it with ``close()`` / ``aclose()``, or use it as a (sync or async) context manager.
    Errors name the file; a path whose directory does not exist raises
    ``CheckpointPathError``.
    """

    def __init__(
        self,
        path: str | Path = "checkpoints.sqlite",
        *,
        max_retained: int | None = None,
        serializer: Serializer | None = None,
        uri: bool = False,
        timeout: float = 30.0,
        cache_threads: int = 128,
    ) -> None:
        self._closed = True  # until the connection is open (__del__ looks at it)
        if max_retained is not None and (type(max_retained) is not int or max_retained < 1):
            raise ValueError(
                f"SqliteSaver(max_retained=...) must be a positive int or None, got {max_retained!r}"
            )
        self.path = str(path)
        self.max_retained = max_retained
        self.serializer = serializer or Serializer()
        self.timeout = timeout
        self._heads = HeadCache(cache_threads, self.serializer)
        self._lock = threading.RLock()
        self._conn = connect(self.path, uri=uri, timeout=timeout)
        self._closed = False

    @classmethod
    def from_conn_string(cls, conn_string: str, **options: Any) -> SqliteSaver:
        """A saver for a path, ``:memory:``, or a ``file:`` URI (``file:db.sqlite?mode=rwc``)."""
        return cls(conn_string, uri=conn_string.startswith("file:"), **options)

    def __repr__(self) -> str:
        return f"SqliteSaver({self.path!r}, max_retained={self.max_retained})"

    # -- writing -----------------------------------------------------------------------------

    def put(
        self,
        checkpoint: Checkpoint,
        delta: CheckpointDelta | None = None,
        *,
        check_head: bool = True,
        fence: str | None = None,
    ) -> None:
        if fence is not None:
            check_fence("put", fence)
        delta = delta if delta is not None else CheckpointDelta.full(checkpoint.values)
        # Serialize first: a value that cannot be stored fails before anything is written.
        encoded = encode_put(self.serializer, checkpoint, delta)
        thread, cid = checkpoint.thread_id, checkpoint.id
        with self._using(f"writing checkpoint {cid!r} of thread {thread!r}"), self._lock:
            index = self._write(checkpoint, encoded, check_head, fence)
            # committed: the head held for the thread moves on with it
            remember_write(self._heads, checkpoint, delta, index, encoded.header)

    def put_writes(
        self, checkpoint: Checkpoint, *, check_head: bool = True, fence: str | None = None
    ) -> None:
        """The running step's record replaces ``checkpoint``'s (``BaseCheckpointSaver``):
        one transaction that rewrites its stored header."""
        if fence is not None:
            check_fence("put_writes", fence)
        header = self.serializer.dumps(header_of(checkpoint), key="<checkpoint header>")
        thread, cid = checkpoint.thread_id, checkpoint.id
        with self._using(f"writing pending writes of checkpoint {cid!r} of thread {thread!r}"):
            with self._lock, Transaction(self._conn) as db:
                if fence is not None:
                    sqlite_leases.check_fence(db, thread, fence)
                row = db.execute(
                    "SELECT head FROM threads WHERE thread_id = ?", (thread,)
                ).fetchone()
                head = row[0] if row else None
                if check_head and head != cid:
                    raise CheckpointConflictError.moved(thread, cid, head)
                updated = db.execute(
                    "UPDATE checkpoints SET header = ? WHERE thread_id = ? AND checkpoint_id = ?",
                    (header, thread, cid),
                ).rowcount
                if not updated:
                    raise CheckpointNotFoundError.for_writes(thread, cid)
            self._heads.rewrite_header(thread, cid, header)

    def _write(
        self, checkpoint: Checkpoint, encoded: EncodedPut, check_head: bool, fence: str | None
    ) -> Index:
        """One transaction that writes the checkpoint (``_savers.retention``'s ``put``; the index as
        ``_savers.index`` builds it); returns its index."""
        s = self.serializer
        replaced, appended = encoded.replaced, encoded.appended
        thread, cid = checkpoint.thread_id, checkpoint.id
        with Transaction(self._conn) as db:
            if fence is not None:
                sqlite_leases.check_fence(db, thread, fence)
            row = db.execute(
                "SELECT head, next_list FROM threads WHERE thread_id = ?", (thread,)
            ).fetchone()
            head, next_list = (row[0], row[1]) if row else (None, 0)
            if check_head and head != checkpoint.parent_id:
                raise CheckpointConflictError.moved(
                    checkpoint.thread_id, checkpoint.parent_id, head
                )
            index = self._index(db, thread, checkpoint.parent_id) if checkpoint.parent_id else {}
            if checkpoint.parent_id and index is None:  # the parent was pruned: store in full
                index, replaced, appended = (
                    {},
                    {k: s.dumps(v, key=k) for k, v in checkpoint.values.items()},
                    {},
                )
            assert index is not None
            db.executemany(
                "INSERT INTO vals VALUES (?, ?, ?, ?)",
                [(thread, cid, key, blob) for key, blob in replaced.items()],
            )
            for key in replaced:
                index[key] = value_ref(cid)
            for key, blobs in appended.items():
                list_no, length, next_list = self._writable_list(
                    db, thread, key, index.get(key), next_list
                )
                db.executemany(
                    "INSERT INTO items VALUES (?, ?, ?, ?)",
                    [(thread, list_no, length + i, blob) for i, blob in enumerate(blobs)],
                )
                db.execute(
                    "INSERT INTO lists VALUES (?, ?, ?) ON CONFLICT (thread_id, list_no) "
                    "DO UPDATE SET length = excluded.length",
                    (thread, list_no, length + len(blobs)),
                )
                index[key] = list_ref(list_no, length + len(blobs))
            # The order of the writes to the thread: what "newest" means, whatever the clocks.
            (seq,) = db.execute(
                "SELECT coalesce(max(seq), 0) + 1 FROM checkpoints WHERE thread_id = ?", (thread,)
            ).fetchone()
            db.execute(
                "INSERT INTO checkpoints (thread_id, checkpoint_id, parent_id, step, header, idx, "
                "seq) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    thread,
                    cid,
                    checkpoint.parent_id,
                    checkpoint.step,
                    encoded.header,
                    s.dumps(index),
                    seq,
                ),
            )
            db.execute(
                "INSERT INTO threads VALUES (?, ?, ?) ON CONFLICT (thread_id) "
                "DO UPDATE SET head = excluded.head, next_list = excluded.next_list",
                (thread, cid, next_list),
            )
            if self.max_retained is not None:
                prune(db, thread, cid, self.max_retained, self.serializer)
        return index

    def _index(self, db: sqlite3.Connection, thread: str, checkpoint_id: str) -> Index | None:
        row = db.execute(
            "SELECT idx FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?",
            (thread, checkpoint_id),
        ).fetchone()
        if row is None:
            return None
        index: Index = self.serializer.loads(row[0])
        return index

    def _writable_list(
        self, db: sqlite3.Connection, thread: str, key: str, ref: list[Any] | None, next_list: int
    ) -> tuple[int, int, int]:
        """The list to append to (``list_no``, current length) and the thread's next list
        number. A checkpoint that is not at the tip of its list (a fork) gets a copy of its
        prefix; a key whose value was written whole becomes a list of that value's items."""
        if ref is not None and ref[0] == LIST:
            list_no, length = ref[1], ref[2]
            (tip,) = db.execute(
                "SELECT length FROM lists WHERE thread_id = ? AND list_no = ?", (thread, list_no)
            ).fetchone()
            if tip == length:
                return list_no, length, next_list
            db.execute(
                "INSERT INTO items SELECT thread_id, ?, pos, value FROM items "
                "WHERE thread_id = ? AND list_no = ? AND pos < ?",
                (next_list, thread, list_no, length),
            )
            return next_list, length, next_list + 1
        if ref is not None and ref[0] == VALUE:
            (blob,) = db.execute(
                "SELECT value FROM vals WHERE thread_id = ? AND checkpoint_id = ? AND key = ?",
                (thread, ref[1], key),
            ).fetchone()
            items = self.serializer.loads(blob) or []
            db.executemany(
                "INSERT INTO items VALUES (?, ?, ?, ?)",
                [
                    (thread, next_list, i, self.serializer.dumps(item))
                    for i, item in enumerate(items)
                ],
            )
            return next_list, len(items), next_list + 1
        return next_list, 0, next_list + 1

    def delete_thread(self, thread_id: str) -> None:
        with (
            self._using(f"deleting thread {thread_id!r}"),
            self._lock,
            Transaction(self._conn) as db,
        ):
            for table in ("threads", "checkpoints", "vals", "lists", "items"):
                db.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))
            self._heads.forget(thread_id)

    # -- reading: each read is one read transaction, one snapshot of the file ----------------

    @contextlib.contextmanager
    def _read(self, doing: str) -> Iterator[None]:
        with self._using(doing), self._lock, Transaction(self._conn, "BEGIN"):
            yield

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The head (or ``checkpoint_id``). The head of a thread this saver read or wrote
        lately is held decoded: a read then asks the file for the head's id only, and when
        another writer moved the thread on, reads just what the new head added."""
        with self._read(f"reading thread {thread_id!r}"):
            db = self._conn
            held = self._heads.entry(thread_id)
            header: bytes | None = None  # the stored header (put_writes may rewrite it)
            if checkpoint_id is None:
                found = db.execute(
                    "SELECT t.head, c.header FROM threads AS t LEFT JOIN checkpoints AS c "
                    "ON c.thread_id = t.thread_id AND c.checkpoint_id = t.head "
                    "WHERE t.thread_id = ?",
                    (thread_id,),
                ).fetchone()
                if found is None:
                    self._heads.forget(thread_id)
                    return None
                checkpoint_id, header, wanted_head = found[0], found[1], True
            else:
                wanted_head = held is not None and held.id == checkpoint_id
            if held is not None and held.id == checkpoint_id:
                values = self._heads.values_if(thread_id, checkpoint_id)
                if values is not None and header is None:  # not known yet: it may be pruned
                    header = self._header(db, thread_id, checkpoint_id)
                if values is not None and header is not None:
                    if header != held.header:
                        self._heads.rewrite_header(thread_id, checkpoint_id, header)
                    return head_checkpoint(self.serializer, thread_id, held, values, header)
            row: Row | None = db.execute(
                f"SELECT {_COLUMNS} FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?",
                (thread_id, checkpoint_id),
            ).fetchone()
            if row is None:
                return None
            if not wanted_head:
                indexes = [self.serializer.loads(row[4])]
                blobs = self._blobs(db, thread_id, indexes)
                return self._checkpoint(thread_id, row, indexes[0], blobs)
            if held is not None and not self._holds(db, thread_id, held.id):
                held = None  # gone (pruned, or the thread was deleted): nothing of it is reused
            head = self._read_head(db, thread_id, row, held)
        self._heads.keep(thread_id, head)
        values = head.values.hand_out(self.serializer)
        return head_checkpoint(self.serializer, thread_id, head, values)

    def _holds(self, db: sqlite3.Connection, thread: str, checkpoint_id: str) -> bool:
        return self._header(db, thread, checkpoint_id) is not None

    def _header(self, db: sqlite3.Connection, thread: str, checkpoint_id: str) -> bytes | None:
        row = db.execute(
            "SELECT header FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?",
            (thread, checkpoint_id),
        ).fetchone()
        return None if row is None else bytes(row[0])

    def _read_head(
        self, db: sqlite3.Connection, thread: str, row: Row, held: CachedHead | None
    ) -> CachedHead:
        """The head ``row`` describes, decoded; what ``held`` (an older head of the thread,
        still stored) already has is reused, so only the values the new head changed and the
        list items it added are read and decoded."""
        cid, parent_id, step, header, idx = row
        index: Index = self.serializer.loads(idx)
        plan = HeadRead(index, held)  # what must be read: what ``held`` lacks
        values: dict[str, bytes] = {}
        for key in plan.values:
            found = db.execute(
                "SELECT value FROM vals WHERE thread_id = ? AND checkpoint_id = ? AND key = ?",
                (thread, index[key][1], key),
            ).fetchone()
            if found is not None:
                values[key] = found[0]
        items: dict[str, list[bytes]] = {}
        for key, start in plan.items.items():
            _, list_no, length = index[key]
            items[key] = [
                blob
                for (blob,) in db.execute(
                    "SELECT value FROM items WHERE thread_id = ? AND list_no = ? AND pos >= ? "
                    "AND pos < ? ORDER BY pos",
                    (thread, list_no, start, length),
                )
            ]
        try:
            return plan.decode(
                self.serializer, self._heads, thread, (cid, parent_id, step, header), values, items
            )
        except UndecodableError as bad:
            assert bad.__cause__ is not None
            raise bad.__cause__ from None
        except HeldHeadChangedError:  # not while this saver's lock is held; to be safe
            return self._read_head(db, thread, row, None)
        except MissingValuesError as missing:
            raise CheckpointError(
                f"{self!r}: checkpoint {cid!r} of thread {thread!r} is missing its stored "
                f"values for {missing.keys}; the file was changed by something other than a "
                "SqliteSaver, or is damaged. Delete the thread (delete_thread) or restore the file"
            ) from None

    def list(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> Iterator[Checkpoint]:
        """Newest first: the reverse of the order the checkpoints were written in (never the
        order of their ids). ``before`` starts after that checkpoint; one this thread does not
        hold (pruned, or never written) gives nothing. All of it is read in one transaction
        (only the rows ``limit`` and ``before`` select, and each list's items once, up to the
        longest prefix they hold); each checkpoint is built as it is yielded, from values
        and items decoded once for the whole listing (see ``_savers.history.Decoded``)."""
        with self._read(f"listing thread {thread_id!r}"):
            db = self._conn
            top: int | None = None
            if before is not None:
                found = db.execute(
                    "SELECT seq FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?",
                    (thread_id, before),
                ).fetchone()
                top = found[0] if found is not None else 0
            rows: builtins.list[Row] = db.execute(
                f"SELECT {_COLUMNS} FROM checkpoints WHERE thread_id = ? AND seq < ? "
                "ORDER BY seq DESC LIMIT ?",
                (thread_id, 2**62 if top is None else top, -1 if limit is None else limit),
            ).fetchall()
            indexes = [self.serializer.loads(row[4]) for row in rows]
            blobs = self._blobs(db, thread_id, indexes)
        decoded = Decoded(self.serializer.loads)  # each value and list item decoded once
        for row, index in zip(rows, indexes):
            yield self._checkpoint(thread_id, row, index, blobs, decoded)

    def _blobs(self, db: sqlite3.Connection, thread: str, indexes: Sequence[Index]) -> _Blobs:
        """The bytes of every value and list item the checkpoints with these indexes hold:
        one query for the values, one per list."""
        blobs = _Blobs()
        wanted = {
            (ref[1], key) for index in indexes for key, ref in index.items() if ref[0] == VALUE
        }
        owners = sorted({cid for cid, _ in wanted})
        for start in range(0, len(owners), _CHUNK):
            chunk = owners[start : start + _CHUNK]
            for cid, key, blob in db.execute(
                f"SELECT checkpoint_id, key, value FROM vals WHERE thread_id = ? "
                f"AND checkpoint_id IN ({','.join('?' * len(chunk))})",
                (thread, *chunk),
            ):
                if (cid, key) in wanted:
                    blobs.values[cid, key] = blob
        lengths: dict[int, int] = {}
        for index in indexes:
            for ref in index.values():
                if ref[0] == LIST:
                    lengths[ref[1]] = max(lengths.get(ref[1], 0), ref[2])
        for list_no, length in lengths.items():
            blobs.lists[list_no] = [
                blob
                for (blob,) in db.execute(
                    "SELECT value FROM items WHERE thread_id = ? AND list_no = ? AND pos < ? "
                    "ORDER BY pos",
                    (thread, list_no, length),
                )
            ]
        return blobs

    def _checkpoint(
        self, thread: str, row: Row, index: Index, blobs: _Blobs, decoded: Decoded | None = None
    ) -> Checkpoint:
        """The checkpoint a row describes, its values decoded from ``blobs`` (through
        ``decoded``, which the checkpoints of one listing share)."""
        cid, parent_id, step, header_blob, _ = row
        loads = self.serializer.loads
        decoded = decoded if decoded is not None else Decoded(loads)
        values: dict[str, Any] = {}
        missing = []
        for key, ref in index.items():
            if ref[0] == VALUE:
                blob = blobs.values.get((ref[1], key))
                if blob is None:
                    missing.append(key)
                else:
                    values[key] = decoded.value((ref[1], key), blob)
            else:
                items = blobs.lists.get(ref[1], [])
                if len(items) < ref[2]:
                    missing.append(key)
                else:
                    values[key] = decoded.items(ref[1], items, ref[2])
        if missing:
            raise CheckpointError(
                f"{self!r}: checkpoint {cid!r} of thread {thread!r} is missing its stored "
                f"values for {sorted(missing)}; the file was changed by something other than a "
                "SqliteSaver, or is damaged. Delete the thread (delete_thread) or restore the file"
            )
        header = loads(header_blob)
        return checkpoint_from({**header, "parent": parent_id, "step": step}, cid, thread, values)

    def stored_bytes(self, thread_id: str) -> int:
        """Bytes of serialized data stored for the thread (checkpoints, values, list items)."""
        with self._read(f"measuring thread {thread_id!r}"):
            total = 0
            for table, column in (
                ("checkpoints", "length(header) + length(idx)"),
                ("vals", "length(value)"),
                ("items", "length(value)"),
            ):
                (size,) = self._conn.execute(
                    f"SELECT coalesce(sum({column}), 0) FROM {table} WHERE thread_id = ?",
                    (thread_id,),
                ).fetchone()
                total += size
            return int(total)
