"""The sync and async drivers: they perform the effects the engine core asks for.

Each effect performs itself (``run(io)`` / ``arun(io)``, the one protocol of
``checkpoint.effects``); ``GraphIO`` is what it is performed with: the saver, and the
executor of a step's tasks. One task's run (attempts, retry, node events) is
``_task_run.task_steps``, written once and performed here by ``perform``/``aperform``.

The sync driver never starts an event loop; parallel sync tasks run on the shared pool,
where a waiting caller runs a task itself rather than wait for a free worker, so nesting
never deadlocks. The async driver never blocks the loop: sync nodes run in worker threads.
A task's failure is its result (the core keeps what its siblings finished); only
exceptions that are not ``Exception`` (Ctrl-C, cancellation) propagate at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Generator, Iterator, Mapping
from typing import Any

from checkpoint import BaseCheckpointSaver
from checkpoint.effects import aperform, perform

from .._runtime.bus import paced
from .._runtime.pool import Countdown, run_all
from .._runtime.run_scope import RunScope
from .._runtime.workers import SIBLING_FAILED, StepCancelled
from ..errors import GraphUsageError
from ._effects import Effect, EmitEffect, ExecuteEffect
from ._progress import DurableStep, stores_progress
from ._task_run import arun_once, run_once, task_steps
from ._tasks import Task, TaskResult
from .types import NodeOutput


def _run_task(
    task: Task, run: RunScope, resume: Mapping[str, Any], can_interrupt: bool
) -> TaskResult:
    """Run a sync node in the current thread, with its retry policy."""
    if task.node.fn is None:
        return TaskResult(
            task,
            error=GraphUsageError(
                f"node '{task.node.name}' is async; run the graph with ainvoke()/astream(), or "
                "give the node a sync implementation too: add_node(name, sync_fn, async_fn)"
            ),
        )
    if task.node.retry is None:
        return run_once(task, run, resume, can_interrupt)
    return perform(task_steps(task, run, resume, can_interrupt))


def _arun_task(
    task: Task, run: RunScope, resume: Mapping[str, Any], can_interrupt: bool
) -> Awaitable[TaskResult]:
    """Run a node without blocking the loop (a sync-only node in a worker thread)."""
    if task.node.retry is None:
        return arun_once(task, run, resume, can_interrupt)
    return aperform(task_steps(task, run, resume, can_interrupt))


def _run_stored(
    task: Task,
    run: RunScope,
    resume: Mapping[str, Any],
    can_interrupt: bool,
    step: DurableStep,
    remaining: Countdown,
) -> TaskResult:
    """``_run_task``, storing its result at once when it finished while siblings still run."""
    result = _run_task(task, run, resume, can_interrupt)
    if remaining.one_finished() and result.finished:
        progress = step.progress_now()
        progress.add(result)
        progress.flush(remaining.running)
    return result


def _execute(
    effect: ExecuteEffect, step: DurableStep | None, run: RunScope, can_interrupt: bool
) -> list[TaskResult]:
    tasks, resume = effect.tasks, effect.resume
    if len(tasks) == 1:
        return [_run_task(tasks[0], run, resume, can_interrupt)]
    # Every task finishes before anything is raised: no node keeps running behind an error.
    if step is not None:
        remaining = Countdown(len(tasks))
        calls = [
            functools.partial(_run_stored, t, run, resume, can_interrupt, step, remaining)
            for t in tasks
        ]
    else:
        calls = [functools.partial(_run_task, t, run, resume, can_interrupt) for t in tasks]
    results = run_all(calls)
    for item in results:
        if isinstance(item, BaseException):
            raise item
    return results  # type: ignore[return-value]


def _started_tasks(
    tasks: list[Task], run: RunScope, resume: Mapping[str, Any], can_interrupt: bool
) -> list[asyncio.Future[TaskResult]]:
    # not a comprehension inside _aexecute: that would make cells of its arguments, tracked by
    # the garbage collector while every run's step waits
    return [
        asyncio.ensure_future(paced(run, _arun_task(t, run, resume, can_interrupt))) for t in tasks
    ]


async def _aexecute(
    effect: ExecuteEffect, step: DurableStep | None, run: RunScope, can_interrupt: bool
) -> list[TaskResult]:
    """Several tasks at once (``adrive`` awaits a single one itself). A failed task cancels
    its siblings; a cancelled run cancels them all. Either way what finished is kept (a sync
    node's thread runs to its end and is kept too): with a ``StepCancelled`` result when the
    run itself was cancelled, so the core stores it before the cancellation goes on."""
    running = _started_tasks(effect.tasks, run, effect.resume, can_interrupt)
    cancelled = False
    reason: str | None = SIBLING_FAILED  # what the tasks still running are told if cancelled
    try:
        pending: set[asyncio.Future[TaskResult]] = set(running)
        while pending:
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if any(f.exception() is not None or f.result().error is not None for f in finished):
                break
            if pending and step is not None:  # stored now: its siblings still run
                progress = step.progress_now()
                for future in running:
                    if future in finished:
                        progress.add(future.result())
                await progress.aflush(functools.partial(_still_running, running))
    except asyncio.CancelledError as stop:
        cancelled = True
        reason = stop.args[0] if stop.args else None  # a parent's sibling failed: passed on
    finally:
        if not all(t.done() for t in running):
            for t in running:
                t.cancel(reason)
            await asyncio.gather(*running, return_exceptions=True)
    # what a task cut short when its run was cancelled is kept only when the run was
    # (a failed sibling's cancel keeps nothing partial: the retry runs the task again)
    keep_cut = cancelled and reason != SIBLING_FAILED
    results: list[TaskResult] = []
    for t in running:
        if t.cancelled():
            continue
        error = t.exception()
        if error is None:
            result = t.result()
            if result.after_cancel != "cut" or keep_cut:
                results.append(result)
        elif not cancelled:
            raise error
    if cancelled:
        if not any(r.finished or r.kept for r in results):
            raise asyncio.CancelledError
        if not any(isinstance(r.error, StepCancelled) for r in results):
            results.append(TaskResult(effect.tasks[0], error=StepCancelled()))
    return results


def _still_running(tasks: list[asyncio.Future[TaskResult]]) -> int:
    return sum(1 for t in tasks if not t.done())


def _store_progress(
    effect: ExecuteEffect, saver: BaseCheckpointSaver | None, run: RunScope
) -> DurableStep | None:
    """Let the step store what finishes while the rest of it still runs (a durable saver
    and a step the core can describe); ``None`` when it cannot."""
    if effect.cursor is None or saver is None:
        return None
    step = run.step = DurableStep(effect, saver)
    return step


def _progress_done(step: DurableStep, run: RunScope) -> Exception | None:
    """The step's tasks are done: no more progress writes; the first that failed, if any."""
    run.step = None
    progress = step.progress
    return progress.error if progress is not None else None


def _report(effects: Generator[Effect, Any, None], stop: BaseException) -> None:
    """Hand ``stop`` (not an ``Exception``: a task's failure is its result) to the core at the
    effect it waits on, so the run reports its end (``run_error``), then let it go. A
    ``GeneratorExit`` (the caller closed the stream, or dropped the run) closes the core: a
    normal stop, which the core reports."""
    if isinstance(stop, GeneratorExit):
        effects.close()
        return
    if isinstance(stop, Exception):
        return  # raised by the core itself: reported there
    with contextlib.suppress(BaseException):  # the caller raises ``stop`` itself
        effects.throw(stop)


class GraphIO:
    """What the graph's effects are performed with (``_effects.EngineIO``): the saver and
    the run, and the executor of a step's tasks, sync and async."""

    __slots__ = ("can_interrupt", "durable", "run", "saver")

    def __init__(self, saver: BaseCheckpointSaver | None, run: RunScope) -> None:
        self.saver = saver
        self.run = run
        self.can_interrupt = saver is not None
        self.durable = stores_progress(saver)

    def execute(self, effect: ExecuteEffect) -> list[TaskResult] | TaskResult:
        """The step's tasks' results (a single task's ``TaskResult`` alone: see
        ``_tasks.step_results``)."""
        run = self.run
        step = _store_progress(effect, self.saver, run) if self.durable else None
        if step is None:
            if len(effect.tasks) == 1:
                return _run_task(effect.tasks[0], run, effect.resume, self.can_interrupt)
            return _execute(effect, None, run, self.can_interrupt)
        try:
            results = _execute(effect, step, run, self.can_interrupt)
        except Exception:
            _progress_done(step, run)
            raise
        error = _progress_done(step, run)
        if error is not None:
            raise error
        return results

    def aexecute(self, effect: ExecuteEffect) -> Awaitable[list[TaskResult] | TaskResult]:
        """What to await for the step's tasks. A single task on a saver that does not store
        progress is its own coroutine, whose ``TaskResult`` the core takes as the step's
        (``_tasks.step_results``): nothing of the step is held while it runs."""
        if self.durable and effect.cursor is not None:
            return self._adurable(effect)
        if len(effect.tasks) == 1:
            return _arun_task(effect.tasks[0], self.run, effect.resume, self.can_interrupt)
        return _aexecute(effect, None, self.run, self.can_interrupt)

    async def _adurable(self, effect: ExecuteEffect) -> list[TaskResult] | TaskResult:
        run = self.run
        step = _store_progress(effect, self.saver, run)
        assert step is not None
        try:
            if len(effect.tasks) == 1:
                results: list[TaskResult] | TaskResult = await _arun_task(
                    effect.tasks[0], run, effect.resume, self.can_interrupt
                )
            else:
                results = await _aexecute(effect, step, run, self.can_interrupt)
        finally:
            error = _progress_done(step, run)
        if error is not None:
            raise error
        return results


def drive(
    effects: Generator[Effect, Any, None],
    saver: BaseCheckpointSaver | None,
    run: RunScope,
) -> Iterator[NodeOutput]:
    """Perform every effect synchronously; yield emitted node outputs. An effect that fails
    with an ``Exception`` (a router, the saver) is thrown back into the core, which reports
    the run's error and raises it."""
    io = GraphIO(saver, run)
    send: Any = None
    failure: Exception | None = None
    try:
        while True:
            try:
                effect = effects.throw(failure) if failure is not None else effects.send(send)
            except StopIteration:
                return
            failure = None
            if type(effect) is EmitEffect:
                yield from effect.outputs
                send = None
                continue
            try:
                send = effect.run(io)
            except Exception as exc:
                failure = exc
    except BaseException as stop:  # Ctrl-C, a cancelled task, a closed stream: see _report
        _report(effects, stop)
        raise


async def _until_outputs(
    effects: Generator[Effect, Any, None], io: GraphIO, emits: bool
) -> list[NodeOutput] | None:
    """Perform effects without blocking the event loop until the core emits node outputs
    (returned, when ``emits``; dropped otherwise) or ends (``None``). An effect that fails with
    an ``Exception`` is thrown back into the core, which reports the run's error and raises
    it; a cancellation or Ctrl-C is reported to the core and raised."""
    send: Any = None
    failure: Exception | None = None
    try:
        while True:
            try:
                effect = effects.throw(failure) if failure is not None else effects.send(send)
            except StopIteration:
                return None
            except StepCancelled:
                raise asyncio.CancelledError from None
            failure = None
            if type(effect) is EmitEffect:
                if emits:
                    return effect.outputs
                send = None
                continue
            try:
                pending = effect.arun(io)
                del effect
                send = await pending
            except Exception as exc:
                failure = exc
    except BaseException as stop:  # Ctrl-C, a cancelled task, a dropped run: see _report
        _report(effects, stop)
        raise


async def adrive(
    effects: Generator[Effect, Any, None],
    saver: BaseCheckpointSaver | None,
    run: RunScope,
) -> AsyncIterator[NodeOutput]:
    """Perform every effect without blocking the event loop; yield emitted node outputs."""
    io = GraphIO(saver, run)
    while (outputs := await _until_outputs(effects, io, True)) is not None:
        try:
            for output in outputs:
                yield output
        except BaseException as stop:  # the caller closed the stream, or Ctrl-C: see _report
            _report(effects, stop)
            raise


def adrive_to_end(
    effects: Generator[Effect, Any, None],
    saver: BaseCheckpointSaver | None,
    run: RunScope,
) -> Awaitable[object]:
    """``adrive`` for a caller that takes no outputs (they are dropped): one coroutine for the
    whole run, where an async generator would add its ``asend`` object and asyncio's weak
    reference to it, two more objects for the collector while the run waits."""
    return _until_outputs(effects, GraphIO(saver, run), False)
