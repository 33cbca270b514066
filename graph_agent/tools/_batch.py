"""A batch of tool calls: how their outcomes end it (the first failure raised, pauses
combined), and which calls of a parallel batch store what they kept at once (those that
finish while siblings still run, on a durable saver). Built on ``_execute`` (one call)."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._runtime.bus import paced
from .._runtime.interrupts import NodeInterrupt
from .._runtime.pool import Countdown
from .._runtime.task_scope import current_task
from ..messages import ToolCall
from ._execute import CallSettings, Outcome, arun_one, arun_stored

if TYPE_CHECKING:
    from .callback import ToolCallback
    from .context import ToolContext

__all__ = ["calls_of", "finished_outcomes", "paced_all", "stored_calls_of", "stores_progress"]


def stores_progress() -> bool:
    """Whether the graph step these calls run in stores finished work as it finishes."""
    task = current_task.get()
    return task is not None and task.run.step is not None


def finished_outcomes(results: Sequence[Outcome | BaseException]) -> list[Outcome]:
    """The outcomes of calls that have all ended. The first failure in call order is raised;
    without one, the interrupts of every call that paused are raised together, so each
    gets its own resume value."""
    failure = next(
        (r for r in results if isinstance(r, BaseException) and not isinstance(r, NodeInterrupt)),
        None,
    )
    if failure is not None:
        raise failure
    paused = [r for r in results if isinstance(r, NodeInterrupt)]
    if paused:
        raise paused[0] if len(paused) == 1 else NodeInterrupt.combine(paused)
    return list(results)  # type: ignore[arg-type]


def calls_of(
    settings: CallSettings,
    calls: Sequence[ToolCall],
    by_name: Mapping[str, ToolCallback],
    context: ToolContext,
) -> list[Coroutine[Any, Any, Outcome]]:
    """One coroutine per call (not a comprehension in the caller: its variables would
    become cells the collector tracks while the calls wait)."""
    return [arun_one(settings, c, by_name, context) for c in calls]


def paced_all(coroutines: list[Coroutine[Any, Any, Outcome]]) -> list[Any]:
    """The calls' coroutines, each held back like its run by a slow event reader."""
    task = current_task.get()
    if task is None or task.run.bus is None or task.run.bus.pace is None:
        return coroutines
    return [paced(task.run, c) for c in coroutines]


def stored_calls_of(
    settings: CallSettings,
    calls: Sequence[ToolCall],
    by_name: Mapping[str, ToolCallback],
    context: ToolContext,
) -> list[Coroutine[Any, Any, Outcome]]:
    """``calls_of`` for a durable saver: each call stores its answer as it finishes."""
    running = Countdown(len(calls))
    return [arun_stored(settings, c, by_name, context, running) for c in calls]
