"""The life of a run apart from any protocol: its record, the order of runs on a thread, its
event log, cancel, and a thread's record, kept in a ``RunStore`` (in memory, beside the threads
in a SQLite file, or in Redis). The server's protocols are adapters over ``RunService``."""

from __future__ import annotations

from ._log import Entry, RunLog
from ._redis import RedisRunStore
from ._sqlite import SqliteRunStore
from .errors import RunDrained, ThreadBusyError, UnknownEventIdError
from .records import (
    ACTIVE,
    MULTITASK_STRATEGIES,
    Run,
    RunStatus,
    ThreadRecord,
    now,
)
from .service import Execute, RunService, ThreadOps
from .store import MemoryRunStore, RunStore

__all__ = [
    "ACTIVE",
    "MULTITASK_STRATEGIES",
    "Entry",
    "Execute",
    "MemoryRunStore",
    "RedisRunStore",
    "Run",
    "RunDrained",
    "RunLog",
    "RunService",
    "RunStatus",
    "RunStore",
    "SqliteRunStore",
    "ThreadBusyError",
    "ThreadOps",
    "ThreadRecord",
    "UnknownEventIdError",
    "now",
]
