"""Retention in a SQLite file: a thread's checkpoints beyond the newest ones dropped, with
every value and list no kept checkpoint refers to."""

from __future__ import annotations

import sqlite3

from ...serde import Serializer
from ..index import LIST, VALUE

__all__ = ["prune"]


def prune(
    db: sqlite3.Connection, thread: str, head: str, keep: int, serializer: Serializer
) -> None:
    """Retention (``retention``'s rule 4, ``index``'s sweep): drop all but the newest
    ``keep`` checkpoints (by ``seq``, the order of the writes; never the head), then every
    value and list that no kept checkpoint's index refers to."""
    old = [
        cid
        for (cid,) in db.execute(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? "
            "ORDER BY seq DESC LIMIT -1 OFFSET ?",
            (thread, keep),
        )
        if cid != head
    ]
    if not old:
        return
    db.executemany(
        "DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id = ?",
        [(thread, cid) for cid in old],
    )
    kept = [
        serializer.loads(blob)
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
