"""The sync and async drivers: they perform the effects the engine core asks for.

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
import inspect
import sys
import time
from collections.abc import AsyncIterator, Generator, Iterator, Mapping
from typing import Any

from checkpoint import BaseCheckpointSaver, UnserializableValueError

from .._runtime.interrupts import NodeInterrupt
from .._runtime.pool import Countdown, run_all
from .._runtime.run_scope import RunScope
from .._runtime.task_scope import TaskScope, current_task, kept_id
from .._runtime.workers import FinishedAfterCancel, in_thread
from ..errors import GraphUsageError
from ..events import NodeEnd, NodeError, NodeStart
from ..events.bus import paced
from ._effects import (
    Effect,
    ExecuteEffect,
    LoadEffect,
    PutEffect,
    RouteEffect,
    StepCancelled,
)
from ._progress import DurableStep, stores_progress
from ._spec import BranchSpec
from ._tasks import Task, TaskResult
from .config import RunnableConfig
from .state import OverAllState
from .types import NodeOutput


def _note(exc: BaseException, message: str) -> None:
    if sys.version_info >= (3, 11) and message not in getattr(exc, "__notes__", ()):
        exc.add_note(message)


def _failed(task: Task, scope: TaskScope, error: Exception, attempt: int) -> float | None:
    """Record a task's failed ``attempt``; the seconds to wait before the next, or ``None``."""
    _note(error, f"raised by node '{task.node.name}' (thread '{task.config.thread_id}')")
    run = scope.run
    if run.bus is not None:
        run.event(NodeError, scope, error=error, attempt=attempt)
    policy = task.node.retry
    if policy is None or not policy.should_retry(error, attempt):
        return None
    return policy.delay(attempt)


def _stored(task: Task, kept: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a stopped task kept, keyed as it is stored with the resume values."""
    return {kept_id(task.id, key): value for key, value in kept.items()} if kept else None


def _ended(task: Task, scope: TaskScope, update: Any) -> TaskResult:
    if scope.run.bus is not None:
        scope.run.event(NodeEnd, scope, update=update)
    return TaskResult(task, update)


def _call(fn: Any, takes_config: bool, task: Task) -> Any:
    return fn(task.state, task.config) if takes_config else fn(task.state)


def _run_task(task: Task, run: RunScope, resume: Mapping[str, Any], can_interrupt: bool) -> Any:
    """Run a sync node in the current thread, with its retry policy."""
    node = task.node
    if node.fn is None:
        return TaskResult(
            task,
            error=GraphUsageError(
                f"node '{node.name}' is async; run the graph with ainvoke()/astream(), or give "
                "the node a sync implementation too: add_node(name, sync_fn, async_fn)"
            ),
        )
    attempt = 1
    kept: dict[str, Any] = {}
    outer = current_task.get()
    while True:
        # a retried attempt may find what its failed attempt left (a subgraph's thread)
        resuming = task.resuming or attempt > 1
        scope = TaskScope(run, node.name, task, resume, can_interrupt, resuming, kept=kept)
        current_task.set(scope)  # restored below by value: no Token kept while it runs
        if run.bus is not None:
            run.event(NodeStart, scope)
        try:
            out = node.fn(task.state, task.config) if node.takes_config else node.fn(task.state)
            if type(out) is not dict and out is not None and inspect.isawaitable(out):
                if inspect.iscoroutine(out):
                    out.close()
                raise GraphUsageError(
                    f"node '{node.name}' returned an awaitable; it is async, so run the graph "
                    "with ainvoke()/astream()"
                )
        except NodeInterrupt as interrupt:
            return TaskResult(task, interrupt=interrupt.records, kept=_stored(task, kept))
        except Exception as exc:
            wait = _failed(task, scope, exc, attempt)
            if wait is None:
                return TaskResult(task, error=exc, kept=_stored(task, kept))
            attempt += 1
            time.sleep(wait)
            continue
        finally:
            current_task.set(outer)
        if run.bus is not None:
            run.event(NodeEnd, scope, update=out)
        return TaskResult(task, out)


async def _arun_task(
    task: Task, run: RunScope, resume: Mapping[str, Any], can_interrupt: bool
) -> TaskResult:
    """Run a node without blocking the loop (a sync-only node in a worker thread)."""
    node = task.node
    attempt = 1
    kept: dict[str, Any] = {}
    outer = current_task.get()
    while True:
        # a retried attempt may find what its failed attempt left (a subgraph's thread)
        resuming = task.resuming or attempt > 1
        scope = TaskScope(run, node.name, task, resume, can_interrupt, resuming, kept=kept)
        current_task.set(scope)  # restored below by value: no Token kept while it runs
        if run.bus is not None:
            run.event(NodeStart, scope)
        try:
            if node.afn is not None:
                out = await _call(node.afn, node.afn_takes_config, task)
            else:
                out = await in_thread(_call, node.fn, node.takes_config, task)
                if inspect.isawaitable(out):  # a sync callable that returned an awaitable
                    out = await out
        except FinishedAfterCancel as stop:  # cancelled; its thread ran on to its end
            if stop.error is not None:
                raise asyncio.CancelledError from None  # it failed: a re-run runs it again
            result = _ended(task, scope, stop.result)  # it finished: the step keeps it
            result.after_cancel = True
            return result
        except NodeInterrupt as interrupt:
            return TaskResult(task, interrupt=interrupt.records, kept=_stored(task, kept))
        except asyncio.CancelledError:
            if not kept:
                raise
            # what finished before the cancel (a sync tool's thread) is stored, then the
            # cancellation goes on (adrive turns this back into CancelledError)
            return TaskResult(task, error=StepCancelled(), kept=_stored(task, kept))
        except Exception as exc:
            wait = _failed(task, scope, exc, attempt)
            if wait is None:
                return TaskResult(task, error=exc, kept=_stored(task, kept))
            attempt += 1
            await asyncio.sleep(wait)
            continue
        finally:
            current_task.set(outer)
        return _ended(task, scope, out)


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
    return result  # type: ignore[no-any-return]


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
    except asyncio.CancelledError:
        cancelled = True
    finally:
        if not all(t.done() for t in running):
            for t in running:
                t.cancel()
            await asyncio.gather(*running, return_exceptions=True)
    results: list[TaskResult] = []
    for t in running:
        if t.cancelled():
            continue
        error = t.exception()
        if error is None:
            results.append(t.result())
        elif not cancelled:
            raise error
    if cancelled:
        if not any(r.finished or r.kept for r in results):
            raise asyncio.CancelledError
        if not any(isinstance(r.error, StepCancelled) for r in results):
            results.append(TaskResult(effect.tasks[0], error=StepCancelled()))
    return results


async def _aexecute_one_or_more(
    effect: ExecuteEffect, step: DurableStep, run: RunScope, can_interrupt: bool
) -> list[TaskResult]:
    if len(effect.tasks) == 1:
        return _after_cancel([await _arun_task(effect.tasks[0], run, effect.resume, can_interrupt)])
    return await _aexecute(effect, step, run, can_interrupt)


def _still_running(tasks: list[asyncio.Future[TaskResult]]) -> int:
    return sum(1 for t in tasks if not t.done())


def _after_cancel(results: list[TaskResult]) -> list[TaskResult]:
    """A single task that finished after its run was cancelled: the core stores it, then
    the cancellation goes on (``StepCancelled``)."""
    if results[0].after_cancel:
        results.append(TaskResult(results[0].task, error=StepCancelled()))
    return results


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


def _call_router(branch: BranchSpec, state: OverAllState, config: RunnableConfig) -> Any:
    try:
        return branch.fn(state, config) if branch.takes_config else branch.fn(state)
    except Exception as exc:
        _note(exc, f"raised by the router of the conditional edge from '{branch.source}'")
        raise


def _route(effect: RouteEffect) -> list[Any]:
    results = []
    for branch in effect.branches:
        result = _call_router(branch, effect.state, effect.config)
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise GraphUsageError(
                f"the router of the conditional edge from '{branch.source}' is async; run the "
                "graph with ainvoke()/astream()"
            )
        results.append(result)
    return results


async def _aroute(effect: RouteEffect) -> list[Any]:
    results = []
    for branch in effect.branches:
        result = _call_router(branch, effect.state, effect.config)
        if inspect.isawaitable(result):
            try:
                result = await result
            except Exception as exc:
                _note(exc, f"raised by the router of the conditional edge from '{branch.source}'")
                raise
        results.append(result)
    return results


def _explain_put_error(
    effect: PutEffect, exc: UnserializableValueError
) -> UnserializableValueError:
    writers = effect.writers_of(exc.key) if exc.key is not None else []
    if not writers:
        return exc
    who = ", ".join(f"'{w}'" for w in writers)
    error = UnserializableValueError(
        f"{exc} (written by node {who})", key=exc.key, path=exc.path, type_name=exc.type_name
    )
    error.__cause__ = exc
    return error


def _report(effects: Generator[Effect, Any, None], stop: BaseException) -> None:
    """Hand ``stop`` (not an ``Exception``: a task's failure is its result) to the core at the
    effect it waits on, so the run reports its end (``run_error``), then let it go."""
    if isinstance(stop, Exception):
        return  # raised by the core itself: reported there
    with contextlib.suppress(BaseException):  # the caller raises ``stop`` itself
        effects.throw(stop)


def drive(
    effects: Generator[Effect, Any, None],
    saver: BaseCheckpointSaver | None,
    run: RunScope,
) -> Iterator[NodeOutput]:
    """Perform every effect synchronously; yield emitted node outputs. A router that fails is
    thrown back into the core (which reports the run's error), then raised."""
    can_interrupt = saver is not None
    durable = stores_progress(saver)
    send: Any = None
    failure: Exception | None = None
    try:
        while True:
            try:
                effect = effects.throw(failure) if failure is not None else effects.send(send)
            except StopIteration:
                return
            failure = None
            kind = type(effect)
            if kind is ExecuteEffect:
                step = _store_progress(effect, saver, run) if durable else None  # type: ignore[arg-type]
                try:
                    send = _execute(effect, step, run, can_interrupt)  # type: ignore[arg-type]
                except Exception as exc:
                    failure = exc
                if step is not None:
                    failure = failure or _progress_done(step, run)
            elif kind is PutEffect:
                assert saver is not None
                try:
                    saver.put(effect.checkpoint, effect.delta, check_head=effect.check_head)  # type: ignore[union-attr]
                except UnserializableValueError as exc:
                    failure = _explain_put_error(effect, exc)  # type: ignore[arg-type]
                except Exception as exc:
                    failure = exc
                send = None
            elif kind is RouteEffect:
                try:
                    send = _route(effect)  # type: ignore[arg-type]
                except Exception as exc:
                    failure = exc
            elif kind is LoadEffect:
                assert saver is not None
                try:
                    send = saver.get(effect.thread_id, effect.checkpoint_id)  # type: ignore[union-attr]
                except Exception as exc:
                    failure = exc
            else:
                yield from effect.outputs  # type: ignore[union-attr]
                send = None
    except GeneratorExit:  # the caller closed the stream: a normal stop, which the core reports
        effects.close()
        raise
    except BaseException as stop:  # Ctrl-C, a cancelled task: the core reports it too
        _report(effects, stop)
        raise


async def adrive(
    effects: Generator[Effect, Any, None],
    saver: BaseCheckpointSaver | None,
    run: RunScope,
) -> AsyncIterator[NodeOutput]:
    """Perform every effect without blocking the event loop; yield emitted node outputs."""
    can_interrupt = saver is not None
    durable = stores_progress(saver)
    send: Any = None
    failure: Exception | None = None
    try:
        while True:
            try:
                effect = effects.throw(failure) if failure is not None else effects.send(send)
            except StopIteration:
                return
            except StepCancelled:
                raise asyncio.CancelledError from None
            failure = None
            try:
                if isinstance(effect, ExecuteEffect):
                    step = _store_progress(effect, saver, run) if durable else None
                    if step is not None:
                        try:
                            send = await _aexecute_one_or_more(effect, step, run, can_interrupt)
                        finally:
                            failure = _progress_done(step, run)
                    elif len(effect.tasks) == 1:  # awaited here: one coroutine less while it runs
                        task, resume = effect.tasks[0], effect.resume
                        del effect  # nothing of the step kept but what the task needs
                        send = _after_cancel([await _arun_task(task, run, resume, can_interrupt)])
                    else:
                        send = await _aexecute(effect, None, run, can_interrupt)
                elif isinstance(effect, PutEffect):
                    assert saver is not None
                    send = None
                    try:
                        await saver.aput(
                            effect.checkpoint, effect.delta, check_head=effect.check_head
                        )
                    except UnserializableValueError as exc:
                        failure = _explain_put_error(effect, exc)
                elif isinstance(effect, RouteEffect):
                    send = await _aroute(effect)
                elif isinstance(effect, LoadEffect):
                    assert saver is not None
                    send = await saver.aget(effect.thread_id, effect.checkpoint_id)
                else:
                    for output in effect.outputs:
                        yield output
                    send = None
            except Exception as exc:
                failure = exc
    except GeneratorExit:  # the caller closed the stream: a normal stop, which the core reports
        effects.close()
        raise
    except BaseException as stop:  # Ctrl-C, a cancelled task: the core reports it too
        _report(effects, stop)
        raise
