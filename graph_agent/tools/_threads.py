"""Sync tools in worker threads, and what a cancellation does to them.

A thread cannot be stopped. When the async run that waits for a sync tool is cancelled, the
tool runs on to its end anyway; if its result were dropped, resuming the thread would run the
tool a second time (a second payment, a second e-mail). So the waiting code waits for the
thread to finish and raises ``FinishedAfterCancel``, a ``CancelledError`` that carries the
outcome: the tool manager keeps it for the task's re-run, and the graph stores what was kept
before the cancellation goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from .._workers import start_in_worker

__all__ = ["FinishedAfterCancel", "in_thread"]


class FinishedAfterCancel(asyncio.CancelledError):
    """The run was cancelled while a sync tool ran in a worker thread, which then finished:
    ``result`` (or ``error``) is its outcome; ``text`` is the tool's answer once converted."""

    def __init__(
        self, result: Any = None, error: BaseException | None = None, text: str | None = None
    ) -> None:
        super().__init__(
            "cancelled while a sync tool ran; the tool finished and its result is kept"
        )
        self.result = result
        self.error = error
        self.text = text


async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a worker thread with the caller's context (as ``asyncio.to_thread``);
    cancelled, it waits for the thread and raises ``FinishedAfterCancel`` with the outcome."""
    call = start_in_worker(fn, *args)
    try:
        await call.waiter
    except asyncio.CancelledError:
        try:
            await call.wait_again()  # the thread runs on: wait for its end
        except asyncio.CancelledError:
            raise  # cancelled again while waiting: give up on keeping it
        try:
            result = call.outcome()
        except BaseException as error:
            raise FinishedAfterCancel(error=error) from None
        raise FinishedAfterCancel(result=result) from None
    return call.outcome()
