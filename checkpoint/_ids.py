"""Checkpoint ids: unique, and carrying the time they were made.

Ids made in one process increase, but the clocks of two processes (or one clock stepped back)
disagree, so no saver orders checkpoints by id: the order is the order of the writes.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import datetime, timezone

_lock = threading.Lock()
_last_ns = 0


def new_checkpoint_id() -> str:
    """A 24-hex-digit id: 16 digits of strictly increasing nanoseconds, then 8 random digits.

    Ids made in one process sort in creation order; the random tail keeps ids made by
    different processes in the same nanosecond apart. Ids made by different processes do not
    sort in creation order when their clocks disagree, which is why savers never use id order.
    """
    global _last_ns
    now = time.time_ns()
    with _lock:
        if now <= _last_ns:
            now = _last_ns + 1
        _last_ns = now
    return f"{now:016x}{os.urandom(4).hex()}"


def created_at_of(checkpoint_id: str) -> datetime:
    """The creation time encoded in an id made by :func:`new_checkpoint_id`."""
    ns = int(checkpoint_id[:16], 16)
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)
