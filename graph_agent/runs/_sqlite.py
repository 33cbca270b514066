"""``SqliteRunStore``: run records, run logs and thread records in a SQLite file, by
default the one that keeps the threads' checkpoints (tables of their own beside the
saver's)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ._codec import dump_data, load_data
from ._log import Entry
from .records import ACTIVE, Run, ThreadRecord
from .store import RunStore

__all__ = ["SqliteRunStore"]

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS run_threads (thread_id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL UNIQUE,
    thread_id TEXT NOT NULL, status TEXT NOT NULL, data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_thread ON runs (thread_id, seq);
CREATE TABLE IF NOT EXISTS run_log (
    run_id TEXT NOT NULL, pos INTEGER NOT NULL, kind TEXT NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (run_id, pos)
) WITHOUT ROWID;
DROP TABLE IF EXISTS run_events;
"""
# ``run_events`` held the logs of an earlier version, in the Agent Protocol's words (no
# reader of this version can read them).


class SqliteRunStore(RunStore):
    """Runs and threads kept in the SQLite file at ``path`` (WAL mode; safe beside a
    ``SqliteSaver`` on the same file, and between processes). Close it with ``aclose()``."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            self.path, timeout=timeout, check_same_thread=False, isolation_level=None
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.executescript(SCHEMA)

    def __repr__(self) -> str:
        return f"SqliteRunStore({self.path!r})"

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def locked() -> T:
            with self._lock:
                return work(self._conn)

        return await asyncio.to_thread(locked)

    async def _write(self, sql: str, *params: Any) -> None:
        def write(conn: sqlite3.Connection) -> None:
            conn.execute(sql, params)

        await self._run(write)

    # -- threads -----------------------------------------------------------------------------

    async def put_thread(self, record: ThreadRecord) -> None:
        await self._write(
            "INSERT INTO run_threads (thread_id, data) VALUES (?, ?) "
            "ON CONFLICT (thread_id) DO UPDATE SET data = excluded.data",
            record.thread_id,
            json.dumps(record.to_dict()),
        )

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        def read(conn: sqlite3.Connection) -> Any:
            sql = "SELECT data FROM run_threads WHERE thread_id = ?"
            return conn.execute(sql, (thread_id,)).fetchone()

        row = await self._run(read)
        return ThreadRecord.from_dict(json.loads(row[0])) if row else None

    async def list_threads(self) -> list[ThreadRecord]:
        def read(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute("SELECT data FROM run_threads").fetchall()

        return [ThreadRecord.from_dict(json.loads(row[0])) for row in await self._run(read)]

    async def delete_thread(self, thread_id: str) -> None:
        def delete(conn: sqlite3.Connection) -> None:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("DELETE FROM run_threads WHERE thread_id = ?", (thread_id,))
                conn.execute(
                    "DELETE FROM run_log WHERE run_id IN "
                    "(SELECT run_id FROM runs WHERE thread_id = ?)",
                    (thread_id,),
                )
                conn.execute("DELETE FROM runs WHERE thread_id = ?", (thread_id,))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

        await self._run(delete)

    # -- runs --------------------------------------------------------------------------------

    async def put_run(self, run: Run) -> None:
        await self._write(
            "INSERT INTO runs (run_id, thread_id, status, data) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, data = excluded.data",
            run.run_id,
            run.thread_id,
            run.status,
            run.to_json(),
        )

    async def _runs(self, where: str, *params: Any, newest_first: bool = False) -> list[Run]:
        order = "DESC" if newest_first else "ASC"

        def read(conn: sqlite3.Connection) -> list[Any]:
            sql = f"SELECT data FROM runs WHERE {where} ORDER BY seq {order}"
            return conn.execute(sql, params).fetchall()

        return [Run.from_json(row[0]) for row in await self._run(read)]

    async def get_run(self, run_id: str) -> Run | None:
        found = await self._runs("run_id = ?", run_id)
        return found[0] if found else None

    async def thread_runs(self, thread_id: str) -> list[Run]:
        return await self._runs("thread_id = ?", thread_id, newest_first=True)

    async def active_runs(self) -> list[Run]:
        return await self._runs(f"status IN {ACTIVE!r}")

    async def delete_run(self, run_id: str) -> None:
        def delete(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM run_log WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))

        await self._run(delete)

    # -- event logs --------------------------------------------------------------------------

    async def append_events(self, run_id: str, entries: Sequence[Entry]) -> None:
        rows = [(run_id, int(e.id), e.kind, dump_data(e.data)) for e in entries]

        def write(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO run_log (run_id, pos, kind, data) VALUES (?, ?, ?, ?)",
                rows,
            )

        await self._run(write)

    async def events(self, run_id: str) -> list[Entry]:
        def read(conn: sqlite3.Connection) -> list[Any]:
            sql = "SELECT pos, kind, data FROM run_log WHERE run_id = ? ORDER BY pos"
            return conn.execute(sql, (run_id,)).fetchall()

        return [Entry(str(pos), kind, load_data(data)) for pos, kind, data in await self._run(read)]

    async def aclose(self) -> None:
        with self._lock:
            self._conn.close()
