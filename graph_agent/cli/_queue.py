"""The queue's side of the command line, shared by ``graph-agent serve --queue`` (its runs
recorded in Redis and handed to workers) and ``graph-agent worker`` (which takes them)."""

from __future__ import annotations

import asyncio
from typing import Any

from ._errors import CliError

__all__ = ["QUEUE_NAME", "check_queue_url", "queued_runs"]

QUEUE_NAME = "graph-agent"  # docket's name for the queue: servers and workers share it


def _needs_extras() -> None:
    try:
        import docket  # noqa: F401
    except ImportError:
        raise CliError(
            "workers need the 'queue' extra (docket): pip install 'graph-agent[queue,server]'"
        ) from None


def check_queue_url(url: str) -> None:
    """``CliError`` unless the queue's Redis answers at ``url``."""
    _needs_extras()
    from ..runs.queue import QueueUnavailableError, check_queue

    try:
        asyncio.run(check_queue(url))
    except QueueUnavailableError as error:
        raise CliError(f"--queue: {error}") from None


def queued_runs(url: str) -> tuple[Any, Any]:
    """``serve --queue URL``'s runs service (runs recorded in Redis at ``url`` and queued
    for workers) and the queue it submits to (closed by the caller: ``await
    queue.aclose()``). ``check_queue_url(url)`` first."""
    from ..runs import RedisRunStore
    from ..runs.queue import RunQueue
    from ..runs.queued import QueuedRunService
    from ..server import Server

    store = RedisRunStore.from_url(url)
    queue = RunQueue(url, QUEUE_NAME)
    return QueuedRunService(store, queue.enqueue, **Server.run_options()), queue
