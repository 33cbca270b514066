"""Cancels across processes: a cancel asked of any server is kept in the ``RedisRunStore``
and published on its channel; the process that drives the run (a server that runs its runs
in process, or a worker) hears it here and stops the run.

One listener per process (``listen``), for every run the process drives: it subscribes,
says so (``subscribed``: a cancel published from then on is heard), then, on every
subscription (the first and each after a lost connection), hands on the cancels kept for
the runs it already drives (``kept``), so none asked while it was not listening is missed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import redis

from ._redis import RedisRunStore

__all__ = ["Heard", "listen"]

RECONNECT_SECONDS = 1.0  # how long a listener that lost its connection waits to try again

# Called with a run's id and how it is to stop ("interrupt" or "rollback").
Heard = Callable[[str, str], Awaitable[None]]


async def listen(
    store: RedisRunStore,
    heard: Heard,
    kept: Callable[[], Awaitable[None]],
    logger: logging.Logger,
    subscribed: asyncio.Event | None = None,
) -> None:
    """Until cancelled: ``heard(run_id, said)`` for each cancel published on ``store``'s
    channel; ``kept()`` once each subscription is made (then ``subscribed`` is set). A lost
    connection is opened again ``RECONNECT_SECONDS`` later."""
    while True:
        try:
            await _listen_once(store, heard, kept, subscribed, logger)
        except (redis.ConnectionError, redis.TimeoutError, OSError) as error:
            logger.warning("listening for cancels: %s; again in %g s", error, RECONNECT_SECONDS)
            await asyncio.sleep(RECONNECT_SECONDS)


async def _listen_once(
    store: RedisRunStore,
    heard: Heard,
    kept: Callable[[], Awaitable[None]],
    subscribed: asyncio.Event | None,
    logger: logging.Logger,
) -> None:
    pubsub = store.client.pubsub()
    try:
        await pubsub.subscribe(store.cancels_channel())
        async for message in pubsub.listen():
            kind = message.get("type")
            if kind == "subscribe":  # Redis has it: what is published from now is heard
                await kept()
                if subscribed is not None:
                    subscribed.set()
                continue
            if kind != "message":
                continue
            data = message["data"]
            said, _, run_id = (data.decode() if isinstance(data, bytes) else data).partition(":")
            try:
                await heard(run_id, said)
            except (redis.ConnectionError, redis.TimeoutError, OSError):
                raise
            except Exception:  # that run's cancel failed: the others are still heard
                logger.exception("cancelling run %s as asked", run_id)
    finally:
        with contextlib.suppress(Exception):
            await pubsub.aclose()
