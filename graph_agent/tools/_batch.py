"""A batch of tool calls: how their outcomes end it (the first failure raised, pauses
combined), how a failure is logged and wrapped, and which calls of a parallel batch store
what they kept at once (those that finish while siblings still run, on a durable saver)."""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._runtime.interrupts import NodeInterrupt
from .._runtime.pool import Countdown
from .._runtime.task_scope import current_task
from ..errors import ToolArgumentsError, ToolExecutionException
from ..events._bus import paced
from ..messages import ToolCall

if TYPE_CHECKING:
    from .callback import ToolCallback
    from .context import ToolContext
    from .manager import ToolCallingManager, _Outcome

_log = logging.getLogger("graph_agent.tools")


def stores_progress() -> bool:
    """Whether the graph step these calls run in stores finished work as it finishes."""
    task = current_task.get()
    return task is not None and task.run.step is not None


def finished_outcomes(results: Sequence[_Outcome | BaseException]) -> list[_Outcome]:
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


def log_tool_error(call: ToolCall, exc: Exception) -> None:
    """A WARNING for a tool error that goes back to the model: with the traceback when the
    tool raised, one line when the model's arguments were invalid (the tool never ran)."""
    if isinstance(exc, ToolArgumentsError):
        _log.warning(
            "the model's arguments for tool '%s' (call %s) are invalid; the errors go back to it",
            call.name,
            call.id,
        )
        return
    _log.warning(
        "tool '%s' (call %s) raised %s; its error goes back to the model",
        call.name,
        call.id,
        type(exc.__cause__ or exc).__name__,
        exc_info=exc,
    )


def as_tool_exception(exc: Exception, tool_name: str) -> ToolExecutionException:
    if isinstance(exc, ToolExecutionException):
        return exc
    wrapped = ToolExecutionException(
        f"tool '{tool_name}' failed: {type(exc).__name__}: {exc}", tool_name=tool_name
    )
    wrapped.__cause__ = exc
    return wrapped


def calls_of(
    manager: ToolCallingManager,
    calls: Sequence[ToolCall],
    by_name: Mapping[str, ToolCallback],
    context: ToolContext,
) -> list[Coroutine[Any, Any, _Outcome]]:
    """One coroutine per call (not a comprehension in the caller: its variables would
    become cells the collector tracks while the calls wait)."""
    return [manager._arun_one(c, by_name, context) for c in calls]


def paced_all(coroutines: list[Coroutine[Any, Any, _Outcome]]) -> list[Any]:
    """The calls' coroutines, each held back like its run by a slow event reader."""
    task = current_task.get()
    if task is None or task.run.bus is None or task.run.bus.pace is None:
        return coroutines
    return [paced(task.run, c) for c in coroutines]


def stored_calls_of(
    manager: ToolCallingManager,
    calls: Sequence[ToolCall],
    by_name: Mapping[str, ToolCallback],
    context: ToolContext,
) -> list[Coroutine[Any, Any, _Outcome]]:
    """``calls_of`` for a durable saver: each call stores its answer as it finishes."""
    running = Countdown(len(calls))
    return [manager._arun_stored(c, by_name, context, running) for c in calls]
