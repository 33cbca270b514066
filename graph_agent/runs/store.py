"""Where the runs service keeps run records, run event logs and thread records: in memory
(``MemoryRunStore``: gone with the process) or beside the threads in a SQLite file
(``SqliteRunStore``), so a restarted server lists earlier runs and threads and takes up the
runs it had accepted but not finished."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from ._log import Entry
from .records import ACTIVE, Run, ThreadRecord

__all__ = ["MemoryRunStore", "RunStore"]


class RunStore(abc.ABC):
    """What the runs service keeps. Every method is async; records are copied in and out
    (a caller's later change to a record it passed does not change what is kept)."""

    # -- threads -----------------------------------------------------------------------------

    @abc.abstractmethod
    async def put_thread(self, record: ThreadRecord) -> None:
        """Keep ``record`` (replacing the thread's earlier one)."""

    @abc.abstractmethod
    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        """The thread's record, ``None`` if none is kept."""

    @abc.abstractmethod
    async def list_threads(self) -> list[ThreadRecord]:
        """Every thread record kept."""

    @abc.abstractmethod
    async def delete_thread(self, thread_id: str) -> None:
        """Forget the thread's record, its runs and their event logs."""

    # -- runs --------------------------------------------------------------------------------

    @abc.abstractmethod
    async def put_run(self, run: Run) -> None:
        """Keep ``run``'s record (its kept fields; replacing the earlier one)."""

    @abc.abstractmethod
    async def get_run(self, run_id: str) -> Run | None:
        """The run's record (its log empty: ``events`` reads it), ``None`` if none is kept."""

    @abc.abstractmethod
    async def thread_runs(self, thread_id: str) -> list[Run]:
        """The thread's runs, newest first."""

    @abc.abstractmethod
    async def active_runs(self) -> list[Run]:
        """Every run still pending or running, oldest first (what a restart takes up)."""

    @abc.abstractmethod
    async def delete_run(self, run_id: str) -> None:
        """Forget the run's record and its event log."""

    # -- event logs --------------------------------------------------------------------------

    @abc.abstractmethod
    async def append_events(self, run_id: str, entries: Sequence[Entry]) -> None:
        """Keep ``entries`` (the next ones of the run's log, in order)."""

    @abc.abstractmethod
    async def events(self, run_id: str) -> list[Entry]:
        """The run's kept events, in order."""

    async def end_events(self, run_id: str) -> None:  # noqa: B027  (only a shared log needs it)
        """Mark the run's log ended, after its last entry and its ended record (another
        process that follows the run stops there)."""

    async def release(self) -> None:  # noqa: B027  (a store may hold no connection)
        """Let go of the connections opened on the running event loop (before it ends);
        the store opens new ones if it is used again."""

    async def aclose(self) -> None:  # noqa: B027  (a store may hold nothing to release)
        """Release what the store holds (a file, a connection)."""


class MemoryRunStore(RunStore):
    """Runs and threads kept in this process (a try-out, tests, ``--saver memory``)."""

    def __init__(self) -> None:
        self._threads: dict[str, dict[str, Any]] = {}
        self._runs: dict[str, dict[str, Any]] = {}
        self._outputs: dict[str, Any] = {}  # as they are: a run's answer is not changed
        self._events: dict[str, list[Entry]] = {}
        # thread id -> its run ids, oldest first: a thread's runs without a scan of every run
        self._by_thread: dict[str, dict[str, None]] = {}

    async def put_thread(self, record: ThreadRecord) -> None:
        self._threads[record.thread_id] = _copy(record.to_dict())

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        data = self._threads.get(thread_id)
        return ThreadRecord.from_dict(_copy(data)) if data is not None else None

    async def list_threads(self) -> list[ThreadRecord]:
        return [ThreadRecord.from_dict(d) for d in self._threads.values()]

    async def delete_thread(self, thread_id: str) -> None:
        self._threads.pop(thread_id, None)
        for run_id in list(self._by_thread.get(thread_id, ())):
            await self.delete_run(run_id)

    async def put_run(self, run: Run) -> None:
        data = run.to_dict()
        self._outputs[run.run_id] = data.pop("output")
        old = self._runs.get(run.run_id)
        if old is not None and old["thread_id"] != data["thread_id"]:
            self._unindex(old["thread_id"], run.run_id)
        self._runs[run.run_id] = _copy(data)
        self._by_thread.setdefault(data["thread_id"], {})[run.run_id] = None

    def _unindex(self, thread_id: str, run_id: str) -> None:
        runs = self._by_thread.get(thread_id)
        if runs is not None:
            runs.pop(run_id, None)
            if not runs:
                del self._by_thread[thread_id]

    def _read(self, data: dict[str, Any]) -> Run:
        return Run.from_dict({**_copy(data), "output": self._outputs.get(data["run_id"])})

    async def get_run(self, run_id: str) -> Run | None:
        data = self._runs.get(run_id)
        return self._read(data) if data is not None else None

    async def thread_runs(self, thread_id: str) -> list[Run]:
        found = [self._read(self._runs[r]) for r in self._by_thread.get(thread_id, ())]
        return found[::-1]

    async def active_runs(self) -> list[Run]:
        return [self._read(d) for d in self._runs.values() if d["status"] in ACTIVE]

    async def delete_run(self, run_id: str) -> None:
        data = self._runs.pop(run_id, None)
        if data is not None:
            self._unindex(data["thread_id"], run_id)
        self._outputs.pop(run_id, None)
        self._events.pop(run_id, None)

    async def append_events(self, run_id: str, entries: Sequence[Entry]) -> None:
        self._events.setdefault(run_id, []).extend(entries)

    async def events(self, run_id: str) -> list[Entry]:
        return list(self._events.get(run_id, ()))


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    import copy

    return copy.deepcopy(data)
