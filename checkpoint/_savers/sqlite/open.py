"""Opening a SqliteSaver's (or a SqliteStore's) file: the path check, the schema and its
migration, and errors that name the file and say how to fix what went wrong."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from urllib.parse import parse_qs, unquote

from ...errors import CheckpointError, CheckpointPathError

SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY, head TEXT NOT NULL, next_list INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id TEXT NOT NULL, checkpoint_id TEXT NOT NULL, parent_id TEXT, step INTEGER NOT NULL,
    header BLOB NOT NULL, idx BLOB NOT NULL, seq INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (thread_id, checkpoint_id)
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
CREATE TABLE IF NOT EXISTS leases (
    thread_id TEXT PRIMARY KEY, token TEXT NOT NULL, expires_at REAL NOT NULL
) WITHOUT ROWID;
"""


class Transaction:
    """``BEGIN`` ... ``COMMIT`` (``ROLLBACK`` on any error). ``BEGIN IMMEDIATE`` for a
    write (one step, all or nothing); a plain (deferred) ``BEGIN`` for a read, which in WAL
    mode reads one snapshot of the file from its first query to its end."""

    def __init__(self, conn: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE") -> None:
        self.conn = conn
        self.begin = begin

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute(self.begin)
        return self.conn

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:
            self.conn.execute("ROLLBACK")


def file_path(path: str, uri: bool) -> str | None:
    """The file a connection string names, or ``None`` for an in-memory database."""
    if not uri:
        return None if path in ("", ":memory:") else path
    if not path.startswith("file:"):
        return path
    rest, _, query = path[len("file:") :].partition("?")
    if parse_qs(query).get("mode") == ["memory"]:
        return None
    if rest.startswith("//"):  # file://host/path: only an empty host or localhost is allowed
        rest = "/" + rest[2:].partition("/")[2]
    rest = unquote(rest)
    return None if rest in ("", ":memory:") else rest


def check_directory(path: str, uri: bool, owner: str = "SqliteSaver") -> None:
    """Raise ``CheckpointPathError`` if the file's directory does not exist (SQLite would
    only say "unable to open database file")."""
    file = file_path(path, uri)
    if file is None:
        return
    directory = os.path.dirname(os.path.abspath(file))
    if os.path.isdir(directory):
        return
    hint = (
        f"Create it first (os.makedirs({directory!r}, exist_ok=True), or mkdir -p), or pass a "
        "path in a directory that exists."
    )
    if file.startswith("~"):
        hint += " A leading ~ is not expanded: use os.path.expanduser(path)."
    raise CheckpointPathError(
        f"{owner} cannot create the database file {path!r}: its directory {directory!r} "
        f"does not exist. {hint}",
        path=path,
    )


def hint_for(exc: sqlite3.Error, timeout: float, kind: str = "checkpoint") -> str:
    """How to fix what a sqlite3 error says (``kind``: what the file should hold)."""
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return (
            f"another connection held the database lock for longer than timeout={timeout}s: "
            "retry, or pass a larger timeout="
        )
    if "not a database" in text or "malformed" in text:
        return (
            f"the file is not a SQLite {kind} database (or is damaged): pass the path of a "
            f"{kind} database, or of a new file"
        )
    if "readonly" in text or "read-only" in text:
        return (
            "this process may not write to the file or to its directory (SQLite keeps -wal and "
            "-shm files beside it): fix the permissions, or pass another path"
        )
    if "unable to open" in text:
        return (
            "check that the path names a file (not a directory) in a directory this process "
            "may create files in"
        )
    return "check the path and the file"


def migrate(conn: sqlite3.Connection) -> None:
    """Bring a file made by an older version up to date (in one transaction, so two
    processes opening it at once do it once): checkpoints get ``seq``, the order in which
    they were written to their thread. Older files were ordered by id; the head goes last."""
    with Transaction(conn) as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(checkpoints)")}
        if "seq" not in columns:
            db.execute("ALTER TABLE checkpoints ADD COLUMN seq INTEGER NOT NULL DEFAULT 0")
            heads = dict(db.execute("SELECT thread_id, head FROM threads").fetchall())
            numbered: list[tuple[int, str, str]] = []
            counts: dict[str, int] = {}
            for thread, cid in db.execute(
                "SELECT thread_id, checkpoint_id FROM checkpoints ORDER BY thread_id, checkpoint_id"
            ).fetchall():
                counts[thread] = counts.get(thread, 0) + 1
                numbered.append((counts[thread], thread, cid))
            numbered = [
                (counts[thread] + 1 if heads.get(thread) == cid else seq, thread, cid)
                for seq, thread, cid in numbered
            ]
            db.executemany(
                "UPDATE checkpoints SET seq = ? WHERE thread_id = ? AND checkpoint_id = ?",
                numbered,
            )
        db.execute("CREATE INDEX IF NOT EXISTS checkpoints_by_seq ON checkpoints (thread_id, seq)")


def saver_schema(conn: sqlite3.Connection) -> None:
    """The saver's tables, created or migrated."""
    conn.executescript(SCHEMA)
    migrate(conn)


def connect(
    path: str,
    *,
    uri: bool,
    timeout: float,
    owner: str = "SqliteSaver",
    kind: str = "checkpoint",
    prepare: Callable[[sqlite3.Connection], None] = saver_schema,
) -> sqlite3.Connection:
    """A connection to ``path`` (WAL mode, ``timeout`` to wait for a lock) with ``prepare``
    run on it (the schema in place), or a ``CheckpointError`` naming ``owner``, the path and
    the fix (``kind``: what the file should hold)."""
    check_directory(path, uri, owner)
    try:
        conn = sqlite3.connect(
            path, uri=uri, timeout=timeout, check_same_thread=False, isolation_level=None
        )
    except sqlite3.Error as exc:
        raise CheckpointError(
            f"{owner} cannot open {path!r}: {exc}; {hint_for(exc, timeout, kind)}"
        ) from exc
    try:
        if file_path(path, uri) is not None:
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        prepare(conn)
    except sqlite3.Error as exc:
        conn.close()
        raise CheckpointError(
            f"{owner} cannot use {path!r}: {exc}; {hint_for(exc, timeout, kind)}"
        ) from exc
    except BaseException:
        conn.close()
        raise
    return conn
