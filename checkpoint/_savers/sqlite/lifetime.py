"""What a saver or a store on one SQLite connection shares: closing it, the warning about one
left open, and sqlite3 errors turned into errors that name the file and the fix."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import warnings
from collections.abc import Iterator

from ...errors import CheckpointError
from ..closing import Closing
from .open import hint_for


class SqliteFile(Closing):
    """A ``Closing`` object on one connection (``_conn``), used under ``_lock``. Subclasses
    set ``_closed = True`` first thing in ``__init__`` and ``False`` once ``_conn`` is open,
    and ``timeout``; ``_kind`` is what the file holds ("checkpoint", "store")."""

    _kind = "checkpoint"
    _conn: sqlite3.Connection
    _lock: threading.RLock
    _closed: bool
    timeout: float

    def close(self) -> None:
        """Close the connection (idempotent). The object cannot be used afterwards."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def __del__(self) -> None:
        if getattr(self, "_closed", True):
            return
        self._closed = True
        name = type(self).__name__
        try:
            warnings.warn(
                f"unclosed {self!r}: call close() (or aclose()), or use 'with {name}(...)'",
                ResourceWarning,
                stacklevel=2,
                source=self,
            )
        except ResourceWarning:  # warnings are errors here: let it be reported
            raise
        except Exception:  # the interpreter is shutting down: nothing to warn with
            pass
        finally:
            self._conn.close()

    @contextlib.contextmanager
    def _using(self, doing: str) -> Iterator[None]:
        """Turn a sqlite3 error into a ``CheckpointError`` that names the file and the fix."""
        if self._closed:
            raise CheckpointError(
                f"{self!r} is closed, so it cannot be used for {doing}: open a new "
                f"{type(self).__name__}"
            )
        try:
            yield
        except sqlite3.Error as exc:
            if self._closed:
                raise CheckpointError(f"{self!r} was closed while {doing}") from exc
            raise CheckpointError(
                f"{self!r} failed while {doing}: {type(exc).__name__}: {exc}; "
                f"{hint_for(exc, self.timeout, self._kind)}"
            ) from exc
