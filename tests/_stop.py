"""Waiting, inside a node or a tool, until its run is asked to stop (its event stream closed
by the reader): the run is still going when the stream is closed, whatever the machine's
speed, and the test does not guess how long a "slow" step takes."""

from __future__ import annotations

import asyncio
import time

from graph_agent._runtime.task_scope import current_task

WAIT = 10.0  # seconds to wait before failing the test


def stop_requested() -> bool:
    """Whether the run of the calling node or tool was asked to stop (it must be streamed)."""
    scope = current_task.get()
    assert scope is not None and scope.run.bus is not None, "the run is not streamed"
    return scope.run.bus.stop_requested


def until_stopped() -> None:
    """Block the calling node or tool until its run is asked to stop."""
    deadline = time.monotonic() + WAIT
    while not stop_requested():
        assert time.monotonic() < deadline, "the stream was not closed"
        time.sleep(0.005)


async def await_stopped() -> None:
    """``until_stopped`` for async code: the loop goes on meanwhile."""
    deadline = time.monotonic() + WAIT
    while not stop_requested():
        assert time.monotonic() < deadline, "the stream was not closed"
        await asyncio.sleep(0.005)
