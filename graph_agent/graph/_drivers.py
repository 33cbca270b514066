"""The sync and async drivers: they perform the effects the engine core asks for.

The sync driver never starts an event loop; parallel sync nodes run on a shared thread
pool. The async driver never blocks the loop: sync nodes run in worker threads.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import sys
from collections.abc import AsyncIterator, Generator, Iterator
from typing import Any

from checkpoint import BaseCheckpointSaver, UnserializableValueError

from .._pool import run_all
from ..errors import GraphUsageError
from ._core import (
    Effect,
    EmitEffect,
    ExecuteEffect,
    LoadEffect,
    PutEffect,
    RouteEffect,
    Task,
    TaskResult,
)
from ._spec import BranchSpec
from .config import RunnableConfig
from .interrupt import NodeInterrupt, TaskScope, current_task
from .state import OverAllState
from .types import NodeOutput


def _note(exc: BaseException, message: str) -> None:
    if sys.version_info >= (3, 11):
        exc.add_note(message)


def _call_node(task: Task, can_interrupt: bool) -> TaskResult:
    """Call a node in the current thread; its update may still be an awaitable."""
    node = task.node
    token = current_task.set(TaskScope(node.name, task.resume, can_interrupt))
    try:
        out = node.fn(task.state, task.config) if node.takes_config else node.fn(task.state)
    except NodeInterrupt as interrupt:
        return TaskResult(node.name, None, interrupt)
    except Exception as exc:
        _note(exc, f"raised by node '{node.name}' (thread '{task.config.thread_id}')")
        raise
    finally:
        current_task.reset(token)
    return TaskResult(node.name, out, None)


def _run_task(task: Task, can_interrupt: bool) -> TaskResult:
    """Run a sync node in the current thread."""
    result = _call_node(task, can_interrupt)
    if inspect.isawaitable(result.update):
        if inspect.iscoroutine(result.update):
            result.update.close()
        raise GraphUsageError(
            f"node '{task.node.name}' returned an awaitable; it is async, so run the graph "
            "with ainvoke()/astream()"
        )
    return result


async def _arun_task(task: Task, can_interrupt: bool) -> TaskResult:
    """Run a node without blocking the loop: sync nodes in a worker thread."""
    node = task.node
    if node.is_async:
        pending: Any = None
    else:
        result = await asyncio.to_thread(_call_node, task, can_interrupt)
        if not inspect.isawaitable(result.update):
            return result
        pending = result.update  # a sync callable that returned an awaitable
    token = current_task.set(TaskScope(node.name, task.resume, can_interrupt))
    try:
        if pending is None:
            pending = node.fn(task.state, task.config) if node.takes_config else node.fn(task.state)
        out = await pending
    except NodeInterrupt as interrupt:
        return TaskResult(node.name, None, interrupt)
    except Exception as exc:
        _note(exc, f"raised by node '{node.name}' (thread '{task.config.thread_id}')")
        raise
    finally:
        current_task.reset(token)
    return TaskResult(node.name, out, None)


def _execute(tasks: list[Task], can_interrupt: bool) -> list[TaskResult]:
    if len(tasks) == 1:
        return [_run_task(tasks[0], can_interrupt)]
    # All of them finish before anything is raised: no node keeps running behind an error.
    results = run_all([functools.partial(_run_task, task, can_interrupt) for task in tasks])
    for item in results:
        if isinstance(item, BaseException):
            raise item
    return results  # type: ignore[return-value]


async def _aexecute(tasks: list[Task], can_interrupt: bool) -> list[TaskResult]:
    if len(tasks) == 1:
        return [await _arun_task(tasks[0], can_interrupt)]
    running = [asyncio.ensure_future(_arun_task(task, can_interrupt)) for task in tasks]
    try:
        await asyncio.wait(running, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        failed = [t for t in running if t.done() and not t.cancelled() and t.exception()]
        if failed or not all(t.done() for t in running):
            for t in running:
                t.cancel()
            await asyncio.gather(*running, return_exceptions=True)
    for t in running:  # the first failure in node order
        if not t.cancelled() and t.exception() is not None:
            raise t.exception()  # type: ignore[misc]
    return [t.result() for t in running]


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
    effects: Generator[Effect, Any, None], saver: BaseCheckpointSaver | None, can_interrupt: bool
) -> Iterator[NodeOutput]:
    """Perform every effect synchronously; yield emitted node outputs. A node or router that
    fails is thrown back into the core, which may still save the run's input, then raises."""
    send: Any = None
    failure: Exception | None = None
    while True:
        try:
            effect = effects.throw(failure) if failure is not None else effects.send(send)
        except StopIteration:
            return
        failure = None
        kind = type(effect)
        if kind is ExecuteEffect or kind is RouteEffect:
            try:
                if kind is ExecuteEffect:
                    send = _execute(effect.tasks, can_interrupt)  # type: ignore[union-attr]
                else:
                    send = _route(effect)  # type: ignore[arg-type]
            except Exception as exc:
                failure = exc
        elif kind is PutEffect:
            assert saver is not None
            try:
                saver.put(effect.checkpoint, effect.delta, check_head=effect.check_head)  # type: ignore[union-attr]
            except UnserializableValueError as exc:
                raise _explain_put_error(effect, exc) from exc.__cause__  # type: ignore[arg-type]
            send = None
        elif kind is LoadEffect:
            assert saver is not None
            send = saver.get(effect.thread_id, effect.checkpoint_id)  # type: ignore[union-attr]
        else:
            yield from effect.outputs  # type: ignore[union-attr]
            send = None


async def adrive(
    effects: Generator[Effect, Any, None], saver: BaseCheckpointSaver | None, can_interrupt: bool
) -> AsyncIterator[NodeOutput]:
    """Perform every effect without blocking the event loop; yield emitted node outputs."""
    send: Any = None
    failure: Exception | None = None
    while True:
        try:
            effect = effects.throw(failure) if failure is not None else effects.send(send)
        except StopIteration:
            return
        failure = None
        if isinstance(effect, (ExecuteEffect, RouteEffect)):
            try:
                if isinstance(effect, ExecuteEffect):
                    send = await _aexecute(effect.tasks, can_interrupt)
                else:
                    send = await _aroute(effect)
            except Exception as exc:
                failure = exc
        elif isinstance(effect, PutEffect):
            assert saver is not None
            try:
                await saver.aput(effect.checkpoint, effect.delta, check_head=effect.check_head)
            except UnserializableValueError as exc:
                raise _explain_put_error(effect, exc) from exc.__cause__
            send = None
        elif isinstance(effect, LoadEffect):
            assert saver is not None
            send = await saver.aget(effect.thread_id, effect.checkpoint_id)
        elif isinstance(effect, EmitEffect):
            for output in effect.outputs:
                yield output
            send = None
