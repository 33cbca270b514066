"""What a step finished, stored while the rest of the step still runs (durable savers only).

A process killed in the middle of a step loses whatever that step did not store. When a
step runs several tasks (or the agent's tool node runs several tool calls) and one of them
finishes while others still run, its result is stored at once as a *pending write* of the
checkpoint the step started from (``BaseCheckpointSaver.put_writes``, LangGraph's shape):
the writes of the tasks that finished, the tool calls' kept answers and the base the step's
task ids derive from, exactly as a failed step is stored, but in that checkpoint's record,
never as a checkpoint of its own. A history holds one checkpoint per step however its tasks
ran, the same in sync and async runs. A re-run of the thread (``invoke(None, config)``) reads
that checkpoint with its pending writes and runs only what had not finished. A step whose
last task is the one finishing writes nothing extra: its own checkpoint follows, so one-task
steps (and ``MemorySaver``, which a killed process loses anyway) pay nothing.

The sync driver writes from whichever thread finished the work; the async driver writes on
the loop. Writes of one step are serialized and each holds all that finished so far. A
write that fails is kept and raised once the step's tasks are done (the step's own write
would meet the same store).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from checkpoint.base import stores_writes
from checkpoint.errors import UnserializableValueError

from .._runtime.task_scope import kept_id
from ._effects import ExecuteEffect, Frontier, StepWriter, fenced_saver
from ._tasks import Task, TaskResult

if TYPE_CHECKING:
    from checkpoint import BaseCheckpointSaver, Checkpoint

__all__ = ["DurableStep", "StepProgress", "stores_progress"]


def stores_progress(saver: BaseCheckpointSaver | None) -> bool:
    """Whether runs on ``saver`` store a step's finished work as it finishes."""
    return stores_writes(saver)


class StepProgress:
    """One step's finished work, written as it finishes. ``add``/``add_kept`` record what
    finished; ``flush(running)`` / ``aflush(running)`` write it unless nothing of the step
    still runs (``running()``: then the step's own checkpoint follows). Writes coalesce: a
    finisher that finds a write on its way leaves its work to that writer, which writes
    again with everything that finished meanwhile. ``error`` is the first write that failed.
    """

    __slots__ = (
        "_alock",
        "_base",
        "_cursor",
        "_dirty",
        "_done",
        "_frontier",
        "_kept",
        "_lock",
        "_resume",
        "_saver",
        "_unstorable",
        "_writing",
        "error",
    )

    def __init__(
        self,
        cursor: StepWriter,
        saver: BaseCheckpointSaver,
        frontier: Frontier,
        resume: Mapping[str, Any],
        base: tuple[str | None, int],
        done: Sequence[TaskResult],
    ) -> None:
        self._cursor = cursor
        self._saver = saver
        self._frontier = frontier
        self._resume = resume
        self._base = base
        self._done = list(done)  # the step's tasks that had finished in an earlier run
        self._kept: dict[str, Any] = {}
        self._dirty = False  # something finished that no write holds yet
        self._lock = threading.Lock()  # guards what finished (tasks end on several threads)
        self._writing = threading.Lock()  # one write at a time (sync runs)
        self._alock: asyncio.Lock | None = None  # one write at a time (async runs)
        self.error: Exception | None = None
        # a finished task's update cannot be stored: no more writes; the step's own write
        # raises the error, naming the node that wrote the value
        self._unstorable = False

    def add(self, result: TaskResult) -> None:
        """A task of the step finished (its result is stored with the next write)."""
        if result.finished:
            with self._lock:
                self._done.append(result)
                self._dirty = True

    def add_kept(self, task: Task, key: str, value: Any) -> None:
        """A tool call of ``task`` finished: ``value`` is what it kept for scope ``key``."""
        with self._lock:
            self._kept[kept_id(task.id, key)] = value
            self._dirty = True

    def _take(self, running: Callable[[], int]) -> Checkpoint | None:
        """The step's checkpoint with everything finished so far as its pending writes, or
        ``None`` when there is nothing new or nothing of the step still runs."""
        with self._lock:
            if not self._dirty or self.error is not None or self._unstorable:
                return None
            self._dirty = False
            if not running():
                return None  # the step's own checkpoint follows: it holds all of it
            return self._cursor.with_writes(
                self._frontier,
                resume={**self._resume, **self._kept} if self._kept else self._resume,
                finished=sorted(self._done, key=_order),
                base=self._base,
            )

    def flush(self, running: Callable[[], int]) -> None:
        """Write what finished (sync runs; on the thread that finished it)."""
        while self._dirty and self.error is None:
            if not self._writing.acquire(blocking=False):
                return  # the write on its way writes again with this
            try:
                checkpoint = self._take(running)
                if checkpoint is None:
                    return
                fence = self._cursor.config.lease
                if fence is None:  # a saver written before fencing takes no fence argument
                    self._saver.put_writes(checkpoint, check_head=self._cursor.check_head)
                else:
                    saver = fenced_saver(self._saver, checkpoint.thread_id)
                    saver.put_writes(checkpoint, check_head=self._cursor.check_head, fence=fence)
            except UnserializableValueError:
                self._unstorable = True
            except Exception as exc:
                self.error = exc
            finally:
                self._writing.release()

    async def aflush(self, running: Callable[[], int]) -> None:
        """``flush`` in async runs (the write awaited on the loop)."""
        if self._alock is None:
            self._alock = asyncio.Lock()
        lock = self._alock
        while self._dirty and self.error is None:
            if lock.locked():
                return  # the write on its way writes again with this
            async with lock:
                checkpoint = self._take(running)
                if checkpoint is None:
                    return
                try:
                    fence, check_head = self._cursor.config.lease, self._cursor.check_head
                    written: Awaitable[None] = (
                        self._saver.aput_writes(checkpoint, check_head=check_head)
                        if fence is None
                        else fenced_saver(self._saver, checkpoint.thread_id).aput_writes(
                            checkpoint, check_head=check_head, fence=fence
                        )
                    )
                    await written
                except UnserializableValueError:
                    self._unstorable = True
                except Exception as exc:
                    self.error = exc


def _order(result: TaskResult) -> tuple[int, int, int]:
    return result.task.order


_CREATING = threading.Lock()


class DurableStep:
    """A step whose finished work is stored as it finishes (a durable saver): what the
    run's ``RunScope.step`` holds while the step's tasks run. Its ``StepProgress`` is made
    on first use (most steps never need one)."""

    __slots__ = ("effect", "progress", "saver")

    def __init__(self, effect: ExecuteEffect, saver: BaseCheckpointSaver) -> None:
        self.effect = effect
        self.saver = saver
        self.progress: StepProgress | None = None

    def progress_now(self) -> StepProgress:
        """The step's progress, made now if it was not yet."""
        progress = self.progress
        if progress is None:
            with _CREATING:
                progress = self.progress
                if progress is None:
                    effect = self.effect
                    assert effect.cursor is not None and effect.frontier is not None
                    assert effect.base is not None
                    progress = self.progress = StepProgress(
                        effect.cursor,
                        self.saver,
                        effect.frontier,
                        effect.resume,
                        effect.base,
                        effect.done,
                    )
        return progress

    def keep_now(self, task: Task, key: str, value: Any, running: Callable[[], int]) -> None:
        """Store a tool call's kept answer now, while ``running()`` sibling calls still run
        (``TaskScope.store_kept``), in sync runs."""
        progress = self.progress_now()
        progress.add_kept(task, key, value)
        progress.flush(running)

    async def akeep_now(self, task: Task, key: str, value: Any, running: Callable[[], int]) -> None:
        """``keep_now`` in async runs."""
        progress = self.progress_now()
        progress.add_kept(task, key, value)
        await progress.aflush(running)
