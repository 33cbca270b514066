"""A SqliteSaver's leases: a table of their own in the saver's file (``leases``: the thread,
the token, and when it expires, in seconds of the wall clock, which the processes sharing
the file on one machine agree on). ``_savers.leases.allowed`` decides; each operation is one
transaction, and a fenced write checks the lease in the write's own transaction."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from typing import TYPE_CHECKING

from ...errors import LeaseLostError
from ..leases import ACQUIRE, RELEASE, RENEW, Op, allowed, check_args, check_thread
from .open import Transaction

__all__ = ["SqliteLeases", "change", "check_fence", "holder"]


def holder(db: sqlite3.Connection, thread_id: str) -> str | None:
    """The token of the thread's live lease, or ``None``."""
    row = db.execute(
        "SELECT token FROM leases WHERE thread_id = ? AND expires_at > ?",
        (thread_id, time.time()),
    ).fetchone()
    return None if row is None else str(row[0])


def check_fence(db: sqlite3.Connection, thread_id: str, fence: str) -> None:
    """Raise ``LeaseLostError`` unless the thread's live lease is ``fence`` (inside the
    write's transaction, so the lease cannot change before it commits)."""
    live = holder(db, thread_id)
    if live != fence:
        raise LeaseLostError.refused(thread_id, fence, live)


def change(conn: sqlite3.Connection, op: Op, thread_id: str, token: str, ttl: float) -> bool:
    """``op`` by ``token`` in one transaction; whether it went ahead."""
    with Transaction(conn) as db:
        if not allowed(op, holder(db, thread_id), token):
            return False
        if op == RELEASE:
            db.execute("DELETE FROM leases WHERE thread_id = ?", (thread_id,))
        else:
            db.execute(
                "INSERT INTO leases VALUES (?, ?, ?) ON CONFLICT (thread_id) "
                "DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at",
                (thread_id, token, time.time() + ttl),
            )
        return True


class SqliteLeases:
    """``SqliteSaver``'s lease API (``BaseCheckpointSaver``'s), on the saver's connection and
    under its lock."""

    _conn: sqlite3.Connection
    _lock: threading.RLock

    if TYPE_CHECKING:

        def _using(self, doing: str) -> contextlib.AbstractContextManager[None]: ...

        def _read(self, doing: str) -> contextlib.AbstractContextManager[None]: ...

    def acquire_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
        ttl = check_args("acquire_lease", thread_id, token, ttl_seconds)
        with self._using(f"acquiring the lease of thread {thread_id!r}"), self._lock:
            return change(self._conn, ACQUIRE, thread_id, token, ttl)

    def renew_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
        ttl = check_args("renew_lease", thread_id, token, ttl_seconds)
        with self._using(f"renewing the lease of thread {thread_id!r}"), self._lock:
            return change(self._conn, RENEW, thread_id, token, ttl)

    def release_lease(self, thread_id: str, token: str) -> None:
        check_args("release_lease", thread_id, token)
        with self._using(f"releasing the lease of thread {thread_id!r}"), self._lock:
            change(self._conn, RELEASE, thread_id, token, 0.0)

    def lease_holder(self, thread_id: str) -> str | None:
        check_thread("lease_holder", thread_id)
        with self._read(f"reading the lease of thread {thread_id!r}"):
            return holder(self._conn, thread_id)
