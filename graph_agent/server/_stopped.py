"""A thread a stopped run left with steps still to run, shown as LangGraph's server shows it:
its next tasks carry the run's error. A client reads a thread whose ``next`` is not empty,
with no interrupt and no task error, as paused at a breakpoint (``useStream`` does, and
agent-chat-ui offers to continue it); a run that was cancelled, timed out or failed did not
pause there."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ..graph import StateSnapshot
from ..runs import Run
from ._wire_messages import error_to_wire

__all__ = ["mark_stopped", "stopped_error"]

_STOPPED = ("cancelled", "timeout", "error")


def stopped_error(runs: list[Run], snapshot: StateSnapshot) -> str | None:
    """The error the next tasks of ``snapshot`` (the thread's head) show: the newest of the
    thread's ``runs`` (newest first) when it stopped (cancelled, timed out, failed) and left
    the thread there (no checkpoint written since), as the ``{"error", "message"}`` JSON a
    run's ``error`` event carries; ``None`` otherwise."""
    if not snapshot.next or snapshot.interrupts or not runs:
        return None
    last = runs[0]
    if last.status not in _STOPPED or snapshot.created_at.timestamp() > last.updated_at:
        return None
    if isinstance(last.output, BaseException):
        return json.dumps(error_to_wire(last.output))
    stop = asyncio.CancelledError("the run was cancelled; what it did is kept")
    return json.dumps(error_to_wire(stop, reveal=lambda _: True))


def mark_stopped(state: dict[str, Any], error: str | None) -> dict[str, Any]:
    """``state`` (a ``ThreadState`` on the wire) with ``error`` on each of its tasks."""
    if error is not None:
        for task in state["tasks"]:
            task["error"] = error
    return state
