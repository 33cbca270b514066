"""One task's run, written once for both drivers: its attempts, its retry policy, its
``node_start``/``node_end``/``node_error`` events, what a paused or stopped task kept.

``task_steps`` is a generator of effects (``checkpoint.effects``): the node call is a
``CallNode`` (a plain call in a sync run; in an async run the node's async implementation,
or its sync one in a worker thread); a node with a retry policy runs its attempts through
``checkpoint.retry.retried`` (the pause between them a ``Sleep``). The drivers in
``_drivers`` only perform them.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Awaitable, Generator, Mapping
from typing import Any

from checkpoint.effects import Effect
from checkpoint.retry import retried

from .._runtime.interrupts import NodeInterrupt
from .._runtime.run_scope import RunScope
from .._runtime.task_scope import TaskScope, current_task, kept_id
from .._runtime.workers import FinishedAfterCancel, NodeCut, StepCancelled, in_thread
from ..errors import GraphUsageError
from ..events import NodeEnd, NodeError, NodeStart
from ._tasks import Task, TaskResult


def note(exc: BaseException, message: str) -> None:
    """Add ``message`` to ``exc``'s notes once (Python 3.11+)."""
    if sys.version_info >= (3, 11) and message not in getattr(exc, "__notes__", ()):
        exc.add_note(message)


def _call(fn: Any, takes_config: bool, task: Task) -> Any:
    return fn(task.state, task.config) if takes_config else fn(task.state)


class _NodeFinishedAfterCancel(FinishedAfterCancel):
    """The run was cancelled while a sync node ran in a worker thread, which then finished:
    the node's own outcome. (A ``FinishedAfterCancel`` from inside a node, a sync tool's,
    is not: what the tool finished with was kept by its call, and the node did not end.)"""


async def _in_thread(task: Task) -> Any:
    node = task.node
    try:
        out = await in_thread(_call, node.fn, node.takes_config, task)
    except FinishedAfterCancel as stop:
        raise _NodeFinishedAfterCancel(stop.result, stop.error) from None
    return (await out) if inspect.isawaitable(out) else out  # a sync fn returned an awaitable


def _refuse_awaitable(task: Task, out: Any) -> None:
    """A node called in a sync run returned an awaitable: it is async."""
    if inspect.isawaitable(out):
        if inspect.iscoroutine(out):
            out.close()
        raise GraphUsageError(
            f"node '{task.node.name}' returned an awaitable; it is async, so run the graph "
            "with ainvoke()/astream()"
        )


class CallNode(Effect):
    """Call the task's node; its output. (The attempt makes its task scope the current
    task around the call: the node's coroutine is awaited in that context.)"""

    __slots__ = ("task",)

    def __init__(self, task: Task) -> None:
        self.task = task

    def run(self, context: Any) -> Any:
        task, node = self.task, self.task.node
        out = node.fn(task.state, task.config) if node.takes_config else node.fn(task.state)  # type: ignore[misc]
        if type(out) is not dict and out is not None:
            _refuse_awaitable(task, out)
        return out

    def arun(self, context: Any) -> Awaitable[Any]:
        task, node = self.task, self.task.node
        if node.afn is not None:
            return _call(node.afn, node.afn_takes_config, task)  # type: ignore[no-any-return]
        return _in_thread(task)


def _stored(task: Task, kept: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a stopped task kept, keyed as it is stored with the resume values."""
    return {kept_id(task.id, key): value for key, value in kept.items()} if kept else None


# -- one attempt: how it begins, ends and stops (the logic), and its two forms -----------------


def _begin(
    task: Task,
    run: RunScope,
    resume: Mapping[str, Any],
    can_interrupt: bool,
    kept: dict[str, Any],
    n: int,
) -> TaskScope:
    """Attempt ``n`` begins: its scope, announced (``node_start``)."""
    # a retried attempt may find what its failed attempt left (a subgraph's thread)
    resuming = task.resuming or n > 1
    scope = TaskScope(run, task.node.name, task, resume, can_interrupt, resuming, kept=kept)
    if run.bus is not None:
        run.event(NodeStart, scope)
    return scope


def _ended(task: Task, scope: TaskScope, update: Any) -> TaskResult:
    """The node returned ``update`` (``node_end``)."""
    if scope.run.bus is not None:
        scope.run.event(NodeEnd, scope, update=update)
    return TaskResult(task, update)


def _stopped(task: Task, scope: TaskScope, stop: BaseException, n: int, last: bool) -> TaskResult:
    """What attempt ``n`` gave when its node raised ``stop``. A failure is raised again for
    the retry loop to judge unless this is the ``last`` attempt there can be; what is not
    the task's own outcome (Ctrl-C, a cancel with nothing kept) propagates."""
    kept = scope.kept
    if isinstance(stop, _NodeFinishedAfterCancel):  # cancelled; its thread ran on to its end
        if stop.error is not None:
            raise asyncio.CancelledError from None  # it failed: a re-run runs it again
        result = _ended(task, scope, stop.result)  # it finished: the step keeps it
        result.after_cancel = "finished"
        return result
    if isinstance(stop, NodeCut):  # cancelled; the node ends on what it had (a cut answer)
        result = _ended(task, scope, stop.update)
        result.after_cancel = "cut"
        # what it kept (a sync tool's result) is stored too, should the step be stopped
        result.kept = _stored(task, kept)
        return result
    if isinstance(stop, NodeInterrupt):
        return TaskResult(task, interrupt=stop.records, kept=_stored(task, kept))
    if isinstance(stop, asyncio.CancelledError) and kept:
        # what finished before the cancel (a sync tool's thread) is stored, then the
        # cancellation goes on (adrive turns this back into CancelledError)
        return TaskResult(task, error=StepCancelled(), kept=_stored(task, kept))
    if not isinstance(stop, Exception):
        raise stop
    note(stop, f"raised by node '{task.node.name}' (thread '{task.config.thread_id}')")
    if scope.run.bus is not None:
        scope.run.event(NodeError, scope, error=stop, attempt=n)
    if last:
        return TaskResult(task, error=stop, kept=_stored(task, kept))
    raise stop


def _attempt(
    task: Task,
    run: RunScope,
    resume: Mapping[str, Any],
    can_interrupt: bool,
    kept: dict[str, Any],
    n: int,
    last: bool,
) -> Generator[Effect, Any, TaskResult]:
    """Attempt ``n`` of ``task`` as effects (async runs, and retried tasks)."""
    scope = _begin(task, run, resume, can_interrupt, kept, n)
    outer = current_task.get()
    current_task.set(scope)  # restored below by value: no Token kept while it runs
    try:
        out = yield CallNode(task)
    except BaseException as stop:
        return _stopped(task, scope, stop, n, last)
    finally:
        current_task.set(outer)
    return _ended(task, scope, out)


def run_once(
    task: Task, run: RunScope, resume: Mapping[str, Any], can_interrupt: bool
) -> TaskResult:
    """The one attempt of a task without a retry policy, in a sync run: ``_attempt``
    called directly rather than as effects (the common case of every sync step)."""
    scope = _begin(task, run, resume, can_interrupt, {}, 1)
    node = task.node
    outer = current_task.get()
    current_task.set(scope)
    try:
        out = node.fn(task.state, task.config) if node.takes_config else node.fn(task.state)  # type: ignore[misc]
        if type(out) is not dict and out is not None:
            _refuse_awaitable(task, out)
    except BaseException as stop:
        return _stopped(task, scope, stop, 1, True)
    finally:
        current_task.set(outer)
    return _ended(task, scope, out)


async def arun_once(
    task: Task, run: RunScope, resume: Mapping[str, Any], can_interrupt: bool
) -> TaskResult:
    """``run_once`` in an async run: one coroutine where ``aperform`` driving ``_attempt``
    would be a coroutine and a generator, one object more while the node waits."""
    scope = _begin(task, run, resume, can_interrupt, {}, 1)
    node = task.node
    outer = current_task.get()
    current_task.set(scope)
    try:
        if node.afn is not None:
            out = await _call(node.afn, node.afn_takes_config, task)
        else:
            out = await _in_thread(task)
    except BaseException as stop:
        return _stopped(task, scope, stop, 1, True)
    finally:
        current_task.set(outer)
    return _ended(task, scope, out)


def _retrying(
    task: Task, run: RunScope, resume: Mapping[str, Any], can_interrupt: bool
) -> Generator[Effect, Any, TaskResult]:
    policy = task.node.retry
    assert policy is not None
    kept: dict[str, Any] = {}

    def attempt(n: int) -> Generator[Effect, Any, TaskResult]:
        return _attempt(task, run, resume, can_interrupt, kept, n, False)

    def pause_after(error: Exception, n: int) -> float | None:
        return policy.delay(n) if policy.should_retry(error, n) else None

    try:
        return (yield from retried(attempt, pause_after))
    except Exception as exc:
        return TaskResult(task, error=exc, kept=_stored(task, kept))


def task_steps(
    task: Task, run: RunScope, resume: Mapping[str, Any], can_interrupt: bool
) -> Generator[Effect, Any, TaskResult]:
    """Run ``task``, with its retry policy if it has one (``checkpoint.retry.retried``);
    what it gave. A failure, a pause or (async) a cancel after some of its work was kept is
    the result, not an exception."""
    if task.node.retry is None:  # one attempt, the last: no retry loop around it
        return _attempt(task, run, resume, can_interrupt, {}, 1, True)
    return _retrying(task, run, resume, can_interrupt)
