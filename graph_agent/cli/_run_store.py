"""Where ``graph-agent serve`` keeps its runs and thread records: beside the threads. A
SQLite file's threads get their runs in the same file; a saver kept in memory, runs in
memory too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkpoint import BaseCheckpointSaver

from ..runs import MemoryRunStore, RedisRunStore, RunStore, SqliteRunStore

__all__ = ["run_store_beside"]


def run_store_beside(
    served: Mapping[str, Any], made: BaseCheckpointSaver | None, spec: str | None = None
) -> RunStore:
    """The store for the runs of ``served``: beside ``made`` (the saver serve made from
    ``spec``), else beside the first served object's own saver. Threads in Redis get their
    runs there too, so servers on one Redis share their threads' records."""
    from checkpoint import SqliteSaver

    if made is not None and spec is not None and spec.startswith(("redis", "rediss", "unix")):
        return RedisRunStore.from_url(spec)
    saver = made
    if saver is None:
        for target in served.values():
            saver = getattr(getattr(target, "graph", target), "saver", None)
            if saver is not None:
                break
    if isinstance(saver, SqliteSaver) and saver.path not in ("", ":memory:"):
        return SqliteRunStore(saver.path)
    return MemoryRunStore()
