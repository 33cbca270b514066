"""The life of a run apart from any protocol: its record, the order of runs on a thread, its
log (the run's own events, in no protocol's words), cancel, and a thread's record, kept in a
``RunStore`` (in memory, beside the threads in a SQLite file, or in Redis). The server's
protocols are adapters over ``RunService``: each encodes a run's log as a client reads it."""

from __future__ import annotations

from ._log import ATTEMPT, BEFORE, EVENT, FAILURE, STATE, Entry, RunLog
from ._redis import RedisRunStore
from ._shown import HIDDEN_MESSAGE, error_text
from ._sqlite import SqliteRunStore
from .errors import RecordedError, RunDrained, ThreadBusyError, UnknownEventIdError
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
    "ATTEMPT",
    "BEFORE",
    "EVENT",
    "FAILURE",
    "HIDDEN_MESSAGE",
    "MULTITASK_STRATEGIES",
    "STATE",
    "Entry",
    "Execute",
    "MemoryRunStore",
    "RecordedError",
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
    "error_text",
    "now",
]
