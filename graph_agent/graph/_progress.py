"""What a step finished, stored while the rest of the step still runs (durable savers only).

A process killed in the middle of a step loses whatever that step did not store. When a
step runs several tasks (or the agent's tool node runs several tool calls) and one of them
finishes while others still run, its result is written at once as a *progress* checkpoint:
the step's frontier, the writes of the tasks that finished, the tool calls' kept answers and
the base the step's task ids derive from, exactly as a failed step is stored. A re-run of the
thread (``invoke(None, config)``) then runs only what had not finished. A step whose last
task is the one finishing writes nothing extra: its own checkpoint follows, so one-task
steps (and ``MemorySaver``, which a killed process loses anyway) pay nothing.

The sync driver writes from whichever thread finished the work; the async driver writes on
the loop. Writes of one step are serialized, each moving the thread's head, so the step's
own checkpoint follows the last of them. A write that fails is kept and raised once the
step's tasks are done (the step's own write would meet the same store).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._context import kept_id
from ._effects import ExecuteEffect, Frontier, PutEffect
from ._tasks import Task, TaskResult

if TYPE_CHECKING:
    from checkpoint import BaseCheckpointSaver

    from ._cursor import Cursor

__all__ = ["StepProgress", "progress_of", "stores_progress"]


def stores_progress(saver: BaseCheckpointSaver | None) -> bool:
    """Whether runs on ``saver`` store a step's finished work as it finishes."""
    return saver is not None and getattr(saver, "durable", True)


class StepProgress:
    """One step's finished work, written as it finishes. ``finished(result)`` and
    ``kept(task, key, value)`` are called by whoever finished something while the step
    still had work running; ``error`` is the first write that failed."""

    __slots__ = (
        "_alock",
        "_base",
        "_cursor",
        "_done",
        "_frontier",
        "_kept",
        "_lock",
        "_nodes",
        "_resume",
        "_saver",
        "error",
    )

    def __init__(
        self,
        cursor: Cursor,
        saver: BaseCheckpointSaver,
        frontier: Frontier,
        nodes: Sequence[str],
        resume: Mapping[str, Any],
        base: tuple[str | None, int],
        done: Sequence[TaskResult],
    ) -> None:
        self._cursor = cursor
        self._saver = saver
        self._frontier = frontier
        self._nodes = nodes
        self._resume = resume
        self._base = base
        self._done = list(done)  # the step's tasks that had finished in an earlier run
        self._kept: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._alock: asyncio.Lock | None = None
        self.error: Exception | None = None

    # -- what finished ----------------------------------------------------------------------

    def _add_result(self, result: TaskResult) -> bool:
        if not result.finished:
            return False
        self._done.append(result)
        return True

    def _add_kept(self, task: Task, key: str, value: Any) -> bool:
        self._kept[kept_id(task.id, key)] = value
        return True

    # -- writing ----------------------------------------------------------------------------

    def _checkpoint(self) -> tuple[Any, PutEffect]:
        """The write of what finished so far: the cursor's write generator and its put."""
        write = self._cursor.write(
            self._frontier,
            source="progress",
            nodes=self._nodes,
            resume={**self._resume, **self._kept} if self._kept else self._resume,
            finished=sorted(self._done, key=_order),
            base=self._base,
        )
        effect = next(write)
        assert isinstance(effect, PutEffect)
        return write, effect

    def finished(self, result: TaskResult) -> None:
        """A task finished while others of its step still run: store it (sync runs)."""
        with self._lock:
            if self._add_result(result):
                self._write()

    def kept(self, task: Task, key: str, value: Any) -> None:
        """A tool call of ``task`` finished (``value`` kept for scope ``key``) while its
        siblings still run: store it (sync runs)."""
        with self._lock:
            self._add_kept(task, key, value)
            self._write()

    def _write(self) -> None:
        if self.error is not None:
            return
        try:
            write, effect = self._checkpoint()
            self._saver.put(effect.checkpoint, effect.delta, check_head=effect.check_head)
            _finish(write)
        except Exception as exc:
            self.error = exc

    async def afinished(self, result: TaskResult) -> None:
        """``finished`` in async runs (the write awaited on the loop)."""
        async with self._async_lock():
            if self._add_result(result):
                await self._awrite()

    async def akept(self, task: Task, key: str, value: Any) -> None:
        """``kept`` in async runs."""
        async with self._async_lock():
            self._add_kept(task, key, value)
            await self._awrite()

    def _async_lock(self) -> asyncio.Lock:
        if self._alock is None:
            self._alock = asyncio.Lock()
        return self._alock

    async def _awrite(self) -> None:
        if self.error is not None:
            return
        try:
            write, effect = self._checkpoint()
            await self._saver.aput(effect.checkpoint, effect.delta, check_head=effect.check_head)
            _finish(write)
        except Exception as exc:
            self.error = exc


def _order(result: TaskResult) -> tuple[int, int, int]:
    return result.task.order


def _finish(write: Any) -> None:
    """Let the cursor's write generator record the checkpoint as written."""
    try:
        write.send(None)
    except StopIteration:
        return
    raise RuntimeError("a checkpoint write asked for more than one put")  # pragma: no cover


_CREATING = threading.Lock()


def progress_of(effect: ExecuteEffect, saver: BaseCheckpointSaver) -> StepProgress:
    """The progress of ``effect``'s step, made on first use (most steps never need one)."""
    progress = effect.progress
    if progress is None:
        with _CREATING:
            progress = effect.progress
            if progress is None:
                assert effect.cursor is not None and effect.frontier is not None
                assert effect.base is not None
                progress = effect.progress = StepProgress(
                    effect.cursor,
                    saver,
                    effect.frontier,
                    effect.nodes,
                    effect.resume,
                    effect.base,
                    effect.done,
                )
    return progress
