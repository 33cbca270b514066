"""Runs the server was asked for: their records, their event logs, one runner per thread.

Protocol-agnostic: the app hands each run a coroutine (``Execute``) that drives the agent and
writes the run's stream events into its log (``RunLog.append``); this module keeps what the
Agent Protocol promises around it:

- every event of a run has an id, ``"1"``, ``"2"``, ..., unique and ordered within the run,
  and a client that reconnects with ``Last-Event-ID`` gets every later event exactly once
  (``RunLog.follow``), while the run goes on or after it ended;
- one run at a time per thread: a new run on a busy thread is refused (``reject``: 409),
  waits its turn (``enqueue``), or stops the running one first (``interrupt``; ``rollback``
  also starts the thread again from where that run began);
- a run is ``pending`` until its thread is free, ``running``, then ``success`` (also when
  it paused for a human: its thread is then ``interrupted``), ``error``, or ``interrupted``
  (it was cancelled), as LangGraph's server spells them;
- a run is answered as accepted only once its input is stored (``started``: the run's
  first checkpoint), so a process that dies right after cannot lose it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

from checkpoint.errors import CheckpointNotFoundError
from hooks.builtin.errors import ToolFeedbackError

from ..errors import GraphResumeError, InvalidUpdateError

__all__ = [
    "MULTITASK_STRATEGIES",
    "Entry",
    "Run",
    "RunLog",
    "RunManager",
    "ThreadBusyError",
    "UnknownEventIdError",
    "client_mistake",
]

_log = logging.getLogger("graph_agent.server")

RunStatus = Literal["pending", "running", "success", "error", "interrupted"]
MULTITASK_STRATEGIES = ("reject", "enqueue", "interrupt", "rollback")


class ThreadBusyError(Exception):
    """A run was asked for on a thread that runs one, with ``multitask_strategy="reject"``."""


class UnknownEventIdError(ValueError):
    """A ``Last-Event-ID`` this run never sent."""


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """One event of a run's stream: ``id`` (its position, from ``"1"``), the SSE event name
    and its JSON-ready data."""

    id: str
    event: str
    data: Any


class RunLog:
    """A run's stream events, kept for the run's life (and after it, for late joiners)."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.closed = False
        self._wake = asyncio.Event()  # set (and replaced) at each change

    def _changed(self) -> None:
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()

    async def append(self, event: str, data: Any) -> Entry:
        entry = Entry(str(len(self.entries) + 1), event, data)
        self.entries.append(entry)
        self._changed()
        return entry

    async def close(self) -> None:
        self.closed = True
        self._changed()

    def position_after(self, last_id: str | None) -> int:
        """Where a reader who last saw ``last_id`` goes on (``None``, or ``"-1"`` as
        ``useStream`` sends it: from the start)."""
        if not last_id or last_id == "-1":
            return 0
        try:
            seen = int(last_id)
        except ValueError:
            raise UnknownEventIdError(
                f"Last-Event-ID {last_id!r} is not an id of this run"
            ) from None
        if seen < 0 or seen > len(self.entries):
            raise UnknownEventIdError(
                f"Last-Event-ID {last_id!r} is not an id of this run (it has sent "
                f"{len(self.entries)} events)"
            )
        return seen

    async def batches(
        self, last_id: str | None = None, *, idle: float | None = None
    ) -> AsyncIterator[list[Entry]]:
        """Every event after ``last_id``, as they come, in lists of those there at once (a
        reader writes each list in one go), until the run's log closes; with ``idle``, an
        empty list each ``idle`` seconds without an event."""
        position = self.position_after(last_id)
        while True:
            if position < len(self.entries):
                fresh = self.entries[position:]
                position += len(fresh)
                yield fresh
                continue
            if self.closed:
                return
            if idle is None:
                await self._wake.wait()
                continue
            try:
                await asyncio.wait_for(self._wake.wait(), idle)
            except asyncio.TimeoutError:
                yield []


@dataclasses.dataclass
class Run:
    """A run's record, as ``GET .../runs/{run_id}`` shows it."""

    run_id: str
    thread_id: str
    assistant_id: str
    multitask_strategy: str
    kwargs: dict[str, Any]
    metadata: dict[str, Any]
    status: RunStatus = "pending"
    created_at: float = dataclasses.field(default_factory=time.time)
    updated_at: float = dataclasses.field(default_factory=time.time)
    error: str | None = None
    failure: BaseException | None = None  # what it failed with
    log: RunLog = dataclasses.field(default_factory=RunLog)
    # where its thread stood when it started (``rollback`` starts the thread again there)
    started_at_checkpoint: str | None = None
    started: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    done: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    rolled_back: bool = False
    # the execute wrote the failure into the log itself (in its protocol's words)
    error_reported: bool = False
    # what the run answers (``wait``, ``join``) once it succeeded, kept with it
    output: dict[str, Any] | None = None
    # run on a thread of its own (``POST /runs/...``), deleted when it ends
    stateless: bool = False

    def mark(self, status: RunStatus, error: str | None = None) -> None:
        self.status = status
        self.error = error
        self.updated_at = time.time()


# What drives a run: it writes the run's events with ``run.log.append``, sets
# ``run.started`` once the run's input is stored, and returns the final status ("success",
# paused for a human or not).
Execute = Callable[[Run], Awaitable[RunStatus]]


def _error_data(error: BaseException) -> Any:
    return {"error": type(error).__name__, "message": str(error)}


def client_mistake(error: BaseException) -> bool:
    """Whether a run failed on what its client sent, not on a fault of the server or of the
    code it serves: an answer to a pause that does not fit it (``ToolFeedbackError``), a
    thread that cannot go on the way it was asked to (``GraphResumeError``), a checkpoint
    the thread does not have, an input the state cannot take."""
    if isinstance(error, InvalidUpdateError):
        return error.node == "__input__"
    return isinstance(error, (ToolFeedbackError, GraphResumeError, CheckpointNotFoundError))


class RunManager:
    """Every run of a server process, one runner per thread at a time. A run that fails is
    logged on ``graph_agent.server``: at ERROR with its traceback, or, when it failed on
    what its client sent (``client_mistake``), in one line at WARNING; ``error_data(error)``
    is what its stream's ``error`` event says (the protocol decides what a client may see)."""

    def __init__(
        self,
        error_data: Callable[[BaseException], Any] = _error_data,
        client_mistake: Callable[[BaseException], bool] = client_mistake,
    ) -> None:
        self.error_data = error_data
        self.client_mistake = client_mistake
        self.runs: dict[str, Run] = {}
        self._by_thread: dict[str, list[str]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._current: dict[str, Run] = {}
        # a thread whose next run must start again from an earlier checkpoint (rollback)
        self.restart_from: dict[str, str | None] = {}

    def thread_runs(self, thread_id: str) -> list[Run]:
        """The thread's runs, newest first."""
        return [self.runs[r] for r in reversed(self._by_thread.get(thread_id, []))]

    def busy(self, thread_id: str) -> bool:
        return any(r.status in ("pending", "running") for r in self.thread_runs(thread_id))

    async def start(
        self,
        thread_id: str,
        assistant_id: str,
        kwargs: dict[str, Any],
        metadata: dict[str, Any],
        multitask_strategy: str,
        execute: Execute,
        head: Callable[[], Awaitable[str | None]],
    ) -> Run:
        """A new run on ``thread_id``, started in the background; returned once its input is
        stored (or once it is queued behind the thread's running one, for ``enqueue``).
        ``head()`` names the thread's latest checkpoint (kept for ``rollback``)."""
        if multitask_strategy not in MULTITASK_STRATEGIES:
            raise ValueError(
                f"multitask_strategy {multitask_strategy!r} is not one of {list(MULTITASK_STRATEGIES)}"
            )
        current = self._current.get(thread_id)
        if current is not None and current.status in ("pending", "running"):
            if multitask_strategy == "reject":
                raise ThreadBusyError(
                    f"thread {thread_id} is busy with run {current.run_id}; wait for it, or ask "
                    "with multitask_strategy 'enqueue', 'interrupt' or 'rollback'"
                )
            if multitask_strategy in ("interrupt", "rollback"):
                await self.cancel(current, rollback=multitask_strategy == "rollback")
        run = Run(
            run_id=str(uuid.uuid4()),
            thread_id=thread_id,
            assistant_id=assistant_id,
            multitask_strategy=multitask_strategy,
            kwargs=kwargs,
            metadata=metadata,
        )
        self.runs[run.run_id] = run
        self._by_thread.setdefault(thread_id, []).append(run.run_id)
        lock = self._locks.setdefault(thread_id, asyncio.Lock())
        queued = lock.locked()  # it waits for the thread's running one (enqueue)
        run.task = asyncio.create_task(self._drive(run, lock, execute, head))
        if not queued:  # answered once its input is stored (or it failed before)
            started = asyncio.create_task(run.started.wait())
            await asyncio.wait({started, run.task}, return_when=asyncio.FIRST_COMPLETED)
            started.cancel()
        return run

    async def _drive(
        self,
        run: Run,
        lock: asyncio.Lock,
        execute: Execute,
        head: Callable[[], Awaitable[str | None]],
    ) -> None:
        try:
            async with lock:
                if run.status != "pending":  # cancelled while it waited
                    return
                self._current[run.thread_id] = run
                run.started_at_checkpoint = await head()
                run.mark("running")
                try:
                    status = await execute(run)
                except asyncio.CancelledError:
                    run.mark("interrupted")
                    raise
                except Exception as error:
                    run.mark("error", f"{type(error).__name__}: {error}")
                    run.failure = error
                    self._log_failure(run, error)
                    if not run.error_reported:
                        await run.log.append("error", self.error_data(error))
                else:
                    run.mark(status)
        finally:
            run.started.set()
            await run.log.close()
            run.done.set()

    def _log_failure(self, run: Run, error: BaseException) -> None:
        if self.client_mistake(error):
            said = " ".join(str(error).split())  # one line, whatever the message holds
            _log.warning(
                "run %s on thread %s failed on what its client sent: %s: %s",
                run.run_id,
                run.thread_id,
                type(error).__name__,
                said,
            )
        else:
            _log.error("run %s on thread %s failed", run.run_id, run.thread_id, exc_info=error)

    async def cancel(self, run: Run, *, rollback: bool = False, wait: bool = True) -> None:
        """Stop ``run`` (``interrupted``); with ``rollback`` the thread's next run starts
        again from where this one began."""
        if run.status not in ("pending", "running"):
            return
        if rollback:
            run.rolled_back = True
            self.restart_from[run.thread_id] = run.started_at_checkpoint
        if run.status == "pending":
            run.mark("interrupted")
        task = run.task
        if task is not None and not task.done():
            task.cancel()
            if wait:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def join(self, run: Run) -> None:
        await run.done.wait()

    def forget_thread(self, thread_id: str) -> None:
        """Drop the records of a deleted thread's runs (none of them is running)."""
        for run_id in self._by_thread.pop(thread_id, []):
            self.runs.pop(run_id, None)
        self._locks.pop(thread_id, None)
        self._current.pop(thread_id, None)
        self.restart_from.pop(thread_id, None)

    def delete(self, run: Run) -> None:
        """Drop the record of a run that is over."""
        self.runs.pop(run.run_id, None)
        ids = self._by_thread.get(run.thread_id, [])
        if run.run_id in ids:
            ids.remove(run.run_id)
