"""The sync and async drivers: they perform the effects the engine core asks for.

The sync driver never starts an event loop; parallel sync tasks run on the shared pool,
where a waiting caller runs a task itself rather than wait for a free worker, so nesting
never deadlocks. The async driver never blocks the loop: sync nodes run in worker threads.
A task's failure is its result (the core keeps what its siblings finished); only
exceptions that are not ``Exception`` (Ctrl-C, cancellation) propagate at once.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import sys
import time
from collections.abc import AsyncIterator, Generator, Iterator, Mapping
from typing import Any

from checkpoint import BaseCheckpointSaver, UnserializableValueError

from .._context import RunScope, TaskScope, current_task, kept_id
from .._pool import run_all
from .._workers import to_worker
from ..errors import GraphUsageError
from ..events import NodeEnd, NodeError, NodeStart
from ._effects import (
    Effect,
    ExecuteEffect,
    LoadEffect,
    PutEffect,
    RouteEffect,
)
from ._spec import BranchSpec
from ._tasks import Task, TaskResult
from .config import RunnableConfig
from .interrupt import NodeInterrupt
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


class _CancelledAfterKeeping(Exception):
    """A task was cancelled after keeping work for its re-run: stored like a failure's, then
    raised as ``CancelledError`` again."""


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
                out = await to_worker(_call, node.fn, node.takes_config, task)
                if inspect.isawaitable(out):  # a sync callable that returned an awaitable
                    out = await out
        except NodeInterrupt as interrupt:
            return TaskResult(task, interrupt=interrupt.records, kept=_stored(task, kept))
        except asyncio.CancelledError:
            if not kept:
                raise
            # what finished before the cancel (a sync tool's thread) is stored, then the
            # cancellation goes on (adrive turns this back into CancelledError)
            return TaskResult(task, error=_CancelledAfterKeeping(), kept=_stored(task, kept))
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


def _execute(effect: ExecuteEffect, run: RunScope, can_interrupt: bool) -> list[TaskResult]:
    tasks, resume = effect.tasks, effect.resume
    if len(tasks) == 1:
        return [_run_task(tasks[0], run, resume, can_interrupt)]
    # Every task finishes before anything is raised: no node keeps running behind an error.
    results = run_all([functools.partial(_run_task, t, run, resume, can_interrupt) for t in tasks])
    for item in results:
        if isinstance(item, BaseException):
            raise item
    return results  # type: ignore[return-value]


def _started_tasks(
    tasks: list[Task], run: RunScope, resume: Mapping[str, Any], can_interrupt: bool
) -> list[asyncio.Future[TaskResult]]:
    # not a comprehension inside _aexecute: that would make cells of its arguments, tracked by
    # the garbage collector while every run's step waits
    return [asyncio.ensure_future(_arun_task(t, run, resume, can_interrupt)) for t in tasks]


async def _aexecute(effect: ExecuteEffect, run: RunScope, can_interrupt: bool) -> list[TaskResult]:
    """Several tasks at once (``adrive`` awaits a single one itself)."""
    running = _started_tasks(effect.tasks, run, effect.resume, can_interrupt)
    try:
        pending: set[asyncio.Future[TaskResult]] = set(running)
        while pending:  # a failed task cancels its siblings; what finished is kept
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if any(f.exception() is not None or f.result().error is not None for f in finished):
                break
    finally:
        if not all(t.done() for t in running):
            for t in running:
                t.cancel()
            await asyncio.gather(*running, return_exceptions=True)
    for t in running:
        if not t.cancelled() and t.exception() is not None:
            raise t.exception()  # type: ignore[misc]
    return [t.result() for t in running if not t.cancelled()]


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


def drive(
    effects: Generator[Effect, Any, None],
    saver: BaseCheckpointSaver | None,
    run: RunScope,
) -> Iterator[NodeOutput]:
    """Perform every effect synchronously; yield emitted node outputs. A router that fails is
    thrown back into the core (which reports the run's error), then raised."""
    can_interrupt = saver is not None
    send: Any = None
    failure: Exception | None = None
    while True:
        try:
            effect = effects.throw(failure) if failure is not None else effects.send(send)
        except StopIteration:
            return
        failure = None
        kind = type(effect)
        if kind is ExecuteEffect:
            try:
                send = _execute(effect, run, can_interrupt)  # type: ignore[arg-type]
            except Exception as exc:
                failure = exc
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


async def adrive(
    effects: Generator[Effect, Any, None],
    saver: BaseCheckpointSaver | None,
    run: RunScope,
) -> AsyncIterator[NodeOutput]:
    """Perform every effect without blocking the event loop; yield emitted node outputs."""
    can_interrupt = saver is not None
    send: Any = None
    failure: Exception | None = None
    while True:
        try:
            effect = effects.throw(failure) if failure is not None else effects.send(send)
        except StopIteration:
            return
        except _CancelledAfterKeeping:
            raise asyncio.CancelledError from None
        failure = None
        try:
            if isinstance(effect, ExecuteEffect):
                if len(effect.tasks) == 1:  # awaited here: one coroutine less while it runs
                    task, resume = effect.tasks[0], effect.resume
                    del effect  # nothing of the step kept but what the task needs
                    send = [await _arun_task(task, run, resume, can_interrupt)]
                else:
                    send = await _aexecute(effect, run, can_interrupt)
            elif isinstance(effect, PutEffect):
                assert saver is not None
                send = None
                try:
                    await saver.aput(effect.checkpoint, effect.delta, check_head=effect.check_head)
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
