"""A saver in one SQLite file (stdlib ``sqlite3``): threads survive restarts."""

from __future__ import annotations

import builtins
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._index import LIST, VALUE, Index, checkpoint_from, header_of, list_ref, value_ref
from .base import BaseCheckpointSaver, Checkpoint, CheckpointDelta
from .errors import CheckpointConflictError, CheckpointError
from .serde import Serializer

__all__ = ["SqliteSaver"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY, head TEXT NOT NULL, next_list INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id TEXT NOT NULL, checkpoint_id TEXT NOT NULL, parent_id TEXT, step INTEGER NOT NULL,
    header BLOB NOT NULL, idx BLOB NOT NULL, PRIMARY KEY (thread_id, checkpoint_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vals (
    thread_id TEXT NOT NULL, checkpoint_id TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_id, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lists (
    thread_id TEXT NOT NULL, list_no INTEGER NOT NULL, length INTEGER NOT NULL,
    PRIMARY KEY (thread_id, list_no)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS items (
    thread_id TEXT NOT NULL, list_no INTEGER NOT NULL, pos INTEGER NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY (thread_id, list_no, pos)
) WITHOUT ROWID;
"""


class SqliteSaver(BaseCheckpointSaver):
    """Checkpoints in a SQLite file (WAL mode), written incrementally: a step is one
    transaction that stores its delta (new list items, changed values) and a small index,
    and moves the thread's head only if it is still the writer's parent
    (``CheckpointConflictError`` otherwise, with nothing written). Reading a checkpoint costs
    a fixed number of queries however long the thread. Safe to share between threads and
    processes; the async methods run in worker threads.

    ``max_retained`` keeps only the newest checkpoints of each thread (the conversation
    itself is kept: list items are shared by every checkpoint that reaches them).
    """

    def __init__(
        self,
        path: str | Path = "checkpoints.sqlite",
        *,
        max_retained: int | None = None,
        serializer: Serializer | None = None,
        uri: bool = False,
        timeout: float = 30.0,
    ) -> None:
        if max_retained is not None and (not isinstance(max_retained, int) or max_retained < 1):
            raise ValueError(
                f"SqliteSaver(max_retained=...) must be a positive int or None, got {max_retained!r}"
            )
        self.path = str(path)
        self.max_retained = max_retained
        self.serializer = serializer or Serializer()
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(
            self.path, uri=uri, timeout=timeout, check_same_thread=False, isolation_level=None
        )
        with self._lock:
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)

    @classmethod
    def from_conn_string(cls, conn_string: str, **options: Any) -> SqliteSaver:
        """A saver for a path, ``:memory:``, or a ``file:`` URI (``file:db.sqlite?mode=rwc``)."""
        return cls(conn_string, uri=conn_string.startswith("file:"), **options)

    def __repr__(self) -> str:
        return f"SqliteSaver({self.path!r}, max_retained={self.max_retained})"

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SqliteSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------------

    def put(
        self,
        checkpoint: Checkpoint,
        delta: CheckpointDelta | None = None,
        *,
        check_head: bool = True,
    ) -> None:
        s = self.serializer
        delta = delta if delta is not None else CheckpointDelta.full(checkpoint.values)
        # Serialize first: a value that cannot be stored fails before anything is written.
        replaced = {k: s.dumps(v, key=k) for k, v in delta.replaced.items()}
        appended = {
            k: [s.dumps(item, key=k) for item in items] for k, items in delta.appended.items()
        }
        header = s.dumps(header_of(checkpoint), key="<checkpoint header>")
        thread, cid = checkpoint.thread_id, checkpoint.id
        with self._lock, self._transaction() as db:
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
            db.execute(
                "INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?)",
                (thread, cid, checkpoint.parent_id, checkpoint.step, header, s.dumps(index)),
            )
            db.execute(
                "INSERT INTO threads VALUES (?, ?, ?) ON CONFLICT (thread_id) "
                "DO UPDATE SET head = excluded.head, next_list = excluded.next_list",
                (thread, cid, next_list),
            )
            if self.max_retained is not None:
                self._prune(db, thread, self.max_retained)

    def _transaction(self) -> Any:
        return _Transaction(self._conn)

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

    def _prune(self, db: sqlite3.Connection, thread: str, keep: int) -> None:
        """Drop all but the newest ``keep`` checkpoints, then every value and list that no
        kept checkpoint's index refers to."""
        old = [
            cid
            for (cid,) in db.execute(
                "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? "
                "ORDER BY checkpoint_id DESC LIMIT -1 OFFSET ?",
                (thread, keep),
            )
        ]
        if not old:
            return
        db.executemany(
            "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?",
            [(thread, cid) for cid in old],
        )
        kept = [
            self.serializer.loads(blob)
            for (blob,) in db.execute("SELECT idx FROM checkpoints WHERE thread_id = ?", (thread,))
        ]
        values = {(ref[1], key) for index in kept for key, ref in index.items() if ref[0] == VALUE}
        lists = {ref[1] for index in kept for ref in index.values() if ref[0] == LIST}
        stale_values = [
            (thread, cid, key)
            for cid, key in db.execute(
                "SELECT checkpoint_id, key FROM vals WHERE thread_id = ?", (thread,)
            ).fetchall()
            if (cid, key) not in values
        ]
        db.executemany(
            "DELETE FROM vals WHERE thread_id = ? AND checkpoint_id = ? AND key = ?", stale_values
        )
        stale_lists = [
            (thread, no)
            for (no,) in db.execute(
                "SELECT list_no FROM lists WHERE thread_id = ?", (thread,)
            ).fetchall()
            if no not in lists
        ]
        db.executemany("DELETE FROM items WHERE thread_id = ? AND list_no = ?", stale_lists)
        db.executemany("DELETE FROM lists WHERE thread_id = ? AND list_no = ?", stale_lists)

    def delete_thread(self, thread_id: str) -> None:
        with self._lock, self._transaction() as db:
            for table in ("threads", "checkpoints", "vals", "lists", "items"):
                db.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))

    # -- reading -----------------------------------------------------------------------------

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        with self._lock:
            db = self._conn
            if checkpoint_id is None:
                row = db.execute(
                    "SELECT c.checkpoint_id, c.parent_id, c.step, c.header, c.idx FROM threads t "
                    "JOIN checkpoints c ON c.thread_id = t.thread_id AND c.checkpoint_id = t.head "
                    "WHERE t.thread_id = ?",
                    (thread_id,),
                ).fetchone()
            else:
                row = db.execute(
                    "SELECT checkpoint_id, parent_id, step, header, idx FROM checkpoints "
                    "WHERE thread_id = ? AND checkpoint_id = ?",
                    (thread_id, checkpoint_id),
                ).fetchone()
            if row is None:
                return None
            cid, parent_id, step, header_blob, index_blob = row
            values = self._values(db, thread_id, self.serializer.loads(index_blob))
        header = self.serializer.loads(header_blob)
        return checkpoint_from(
            {**header, "parent": parent_id, "step": step}, cid, thread_id, values
        )

    def _values(self, db: sqlite3.Connection, thread: str, index: Index) -> dict[str, Any]:
        loads = self.serializer.loads
        values: dict[str, Any] = {}
        wanted = {(ref[1], key) for key, ref in index.items() if ref[0] == VALUE}
        if wanted:
            marks = ",".join("?" * len({c for c, _ in wanted}))
            for cid, key, blob in db.execute(
                f"SELECT checkpoint_id, key, value FROM vals WHERE thread_id = ? "
                f"AND checkpoint_id IN ({marks})",
                (thread, *{c for c, _ in wanted}),
            ):
                if (cid, key) in wanted:
                    values[key] = loads(blob)
        for key, ref in index.items():
            if ref[0] == LIST:
                values[key] = [
                    loads(blob)
                    for (blob,) in db.execute(
                        "SELECT value FROM items WHERE thread_id = ? AND list_no = ? AND pos < ? "
                        "ORDER BY pos",
                        (thread, ref[1], ref[2]),
                    )
                ]
        missing = set(index) - set(values)
        if missing:
            raise CheckpointError(
                f"thread '{thread}' is missing stored values for {sorted(missing)}"
            )
        return values

    def list(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> Iterator[Checkpoint]:
        with self._lock:
            ids: builtins.list[str] = [
                cid
                for (cid,) in self._conn.execute(
                    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_id < ? "
                    "ORDER BY checkpoint_id DESC LIMIT ?",
                    (
                        thread_id,
                        before if before is not None else "\U0010ffff",
                        -1 if limit is None else limit,
                    ),
                )
            ]
        for cid in ids:
            checkpoint = self.get(thread_id, cid)
            if checkpoint is not None:
                yield checkpoint

    def stored_bytes(self, thread_id: str) -> int:
        """Bytes of serialized data stored for the thread (checkpoints, values, list items)."""
        with self._lock:
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


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on any error): one step, all or nothing."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        self.conn.execute("ROLLBACK" if kind is not None else "COMMIT")
