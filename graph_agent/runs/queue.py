"""The queue under ``graph-agent serve --queue`` and ``graph-agent worker``: run ids queued
on docket (the ``pydocket`` package, extra ``queue``), a Redis Stream read by a consumer group.

The message carries only the run id, as docket's task key; the task has no arguments, so
nothing a client sent is pickled (docket pickles task arguments). The key makes a run unique:
queueing a run id that is already queued or running does nothing, except from the handler of
that very run (a run that stops and goes back to the queue), which queues it again.

A worker holds each message it runs under a lease that docket renews from the worker's event
loop. This module renews it from a thread as well, for as long as the worker runs (its drain
included), so neither a handler that blocks the loop past ``redelivery_timeout`` nor a drain
longer than it hands the run to a second worker; docket stops renewing during a drain. A run
is given to another worker only when its worker stops renewing: killed, paused (SIGSTOP) or
cut off from Redis for ``redelivery_timeout``, plus up to a quarter of it for the next sweep.

URLs are docket's: ``redis://[:password@]host:port/db``, ``rediss://...`` (TLS),
``redis+cluster://host:port`` for a Redis Cluster, ``memory://`` (in this process only).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster

try:
    from docket import CurrentExecution, Docket, Execution, Worker
except ImportError as error:
    raise ImportError(
        "graph_agent.runs.queue (the queue of `serve --queue` and `worker`) needs docket, "
        f"which cannot be imported ({error}): pip install 'graph-agent[queue]'"
    ) from error

from ..errors import GraphAgentError

__all__ = ["QueueUnavailableError", "RunQueue", "check_queue", "work"]

TASK = "graph_agent_run"  # the one task name on the stream: its key is the run id
_log = logging.getLogger("graph_agent.runs.queue")

# The run id whose handler is running in this context: its own enqueue queues it again.
_HANDLING: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "graph_agent_queued_run", default=None
)

# Resets the idle time of every message this consumer holds, in one step: a message another
# worker has taken in the meantime is in that worker's list, not ours, and is left alone.
_RENEW = """
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', tonumber(ARGV[3]), ARGV[2])
if #pending == 0 then return 0 end
local claim = {'XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0}
for _, entry in ipairs(pending) do claim[#claim + 1] = entry[1] end
claim[#claim + 1] = 'IDLE'
claim[#claim + 1] = 0
claim[#claim + 1] = 'JUSTID'
redis.call(unpack(claim))
return #pending
"""
_RENEW_AT_MOST = 1000
_EXECUTION = CurrentExecution()  # docket passes the task its Execution (its key: the run id)


class QueueUnavailableError(GraphAgentError, ConnectionError):
    """The queue's Redis cannot be reached or used at its URL (shown with its password
    masked), and what to do about it."""


def _masked(url: str) -> str:
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
    except ValueError:
        return "(a URL that cannot be parsed)"
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user.partition(':')[0]}:***@{host}"))


def _is_cluster(url: str) -> bool:
    return urlsplit(url).scheme in ("redis+cluster", "rediss+cluster")


def _plain(url: str) -> str:
    """A cluster URL as redis-py reads it (``redis+cluster://`` -> ``redis://``)."""
    return url.replace("+cluster://", "://", 1) if _is_cluster(url) else url


def _checked(url: str) -> str:
    if not isinstance(url, str) or "://" not in url:
        raise QueueUnavailableError(
            f"the run queue needs a Redis URL, got {url!r}: redis://HOST:PORT/DB, "
            "rediss://... for TLS, redis+cluster://HOST:PORT for a Redis Cluster"
        )
    scheme = urlsplit(url).scheme
    known = ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster", "redis+sentinel")
    if scheme not in (*known, "memory"):
        raise QueueUnavailableError(
            f"the run queue's URL {_masked(url)} has the scheme {scheme!r}; use redis://, "
            "rediss://, unix://, redis+cluster:// (a Redis Cluster) or redis+sentinel://"
        )
    return url


async def check_queue(url: str) -> None:
    """Raises ``QueueUnavailableError`` (saying why and what to do) unless the queue's Redis
    answers at ``url``."""
    await _check_reachable(_checked(url))


async def _check_reachable(url: str) -> None:
    """Raises ``QueueUnavailableError`` unless Redis answers at ``url`` as the URL says (a
    node of a Redis Cluster behind a plain ``redis://`` URL is refused: docket's keys would
    be spread over its slots)."""
    if urlsplit(url).scheme in ("memory", "redis+sentinel"):
        return  # in this process / found through the sentinels by docket itself
    fix = "start Redis there, or pass the URL of a running one"
    client: Any
    try:
        if _is_cluster(url):
            client = redis.asyncio.cluster.RedisCluster.from_url(
                _plain(url), socket_connect_timeout=5
            )
        else:
            client = redis.asyncio.Redis.from_url(url, socket_connect_timeout=5)
    except (ValueError, redis.RedisError) as error:
        raise QueueUnavailableError(
            f"the run queue's URL {_masked(url)} is not one Redis reads: {error}"
        ) from None
    try:
        await client.ping()
        if not _is_cluster(url):
            info = await client.info("cluster")
            if info.get("cluster_enabled"):
                where = urlsplit(url)
                raise QueueUnavailableError(
                    f"the run queue's Redis at {_masked(url)} is a node of a Redis Cluster: "
                    f"use redis+cluster://{where.hostname}:{where.port}"
                )
    except redis.AuthenticationError as error:
        raise QueueUnavailableError(
            f"the run queue's Redis at {_masked(url)} refused the login ({error}): put the "
            "right password in the URL (redis://:PASSWORD@HOST:PORT/DB)"
        ) from None
    except (redis.RedisError, OSError) as error:
        said = str(error).replace(urlsplit(url).password or "\0", "***")
        raise QueueUnavailableError(
            f"the run queue's Redis at {_masked(url)} cannot be reached ({said}): {fix}"
        ) from None
    finally:
        await client.aclose()


async def _unqueued_task(execution: Execution = _EXECUTION) -> None:
    raise RuntimeError(f"run {execution.key}: queued runs are run by work(), not here")


_unqueued_task.__name__ = TASK


class RunQueue:
    """Queues run ids for the workers of ``work(url, name, ...)``.

    ``RunQueue(url, name)`` connects on entering (``async with``) or on its first
    ``enqueue``, in the running event loop; close it on that loop (``aclose()`` or leaving
    the ``async with``). An unreachable Redis raises ``QueueUnavailableError`` naming the URL
    (its password masked).
    """

    def __init__(self, url: str, name: str = "graph-agent") -> None:
        self.url = _checked(url)
        self.name = name
        self._docket: Docket | None = None
        self._opening: asyncio.Lock | None = None

    async def __aenter__(self) -> RunQueue:
        await self._open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _open(self) -> Docket:
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._docket is None:
                await _check_reachable(self.url)
                docket = Docket(name=self.name, url=self.url)
                docket.register(_unqueued_task, names=[TASK])
                await docket.__aenter__()
                self._docket = docket
            return self._docket

    async def enqueue(self, run_id: str) -> None:
        """Queue ``run_id`` for a worker. A run id already queued, or running on a worker,
        is not queued twice; called from the handler of ``run_id`` itself (a run going back
        to the queue), it is queued again, and the running one's message is dropped when
        its handler returns."""
        if not isinstance(run_id, str) or not run_id:
            raise ValueError(f"a run id to queue is a non-empty string, got {run_id!r}")
        docket = await self._open()
        if _HANDLING.get() == run_id:
            await docket.replace(TASK, when=datetime.now(timezone.utc), key=run_id)()
        else:
            await docket.add(TASK, key=run_id)()

    async def aclose(self) -> None:
        """Close the connection (if it was opened); the queued runs stay in Redis."""
        docket, self._docket = self._docket, None
        if docket is not None:
            await docket.__aexit__(None, None, None)


class _Renewal:
    """Renews the messages of one consumer from a thread of its own, with a client of its
    own, every quarter of the redelivery timeout, until ``stop()``."""

    def __init__(self, url: str, docket: Docket, consumer: str, timeout: float) -> None:
        plain = _plain(url)
        self.client: Any = (
            redis.cluster.RedisCluster.from_url(plain, socket_timeout=timeout)
            if _is_cluster(url)
            else redis.Redis.from_url(plain, socket_timeout=timeout)
        )
        self.args = (docket.stream_key, docket.worker_group_name, consumer, _RENEW_AT_MOST)
        self.every = timeout / 4
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=f"queue lease {consumer}")

    def start(self) -> None:
        self.thread.start()

    def _loop(self) -> None:
        stream, group, consumer, most = self.args
        while not self.stopped.wait(self.every):
            try:
                self.client.eval(_RENEW, 1, stream, group, consumer, most)
            except redis.ResponseError as error:
                if "NOGROUP" not in str(error):  # no group yet: nothing is held
                    _log.warning("renewing the queue's leases: %s", error)
            except (redis.RedisError, OSError) as error:
                _log.warning("renewing the queue's leases: %s", error)

    def stop(self) -> None:
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join()
        self.client.close()


async def work(
    url: str,
    name: str,
    handler: Callable[[str], Awaitable[None]],
    *,
    concurrency: int,
    stop: asyncio.Event | None = None,
    redelivery_timeout: float,
) -> None:
    """Run a docket worker on the queue ``name`` at ``url``: ``await handler(run_id)`` for
    each queued run, at most ``concurrency`` at once, until ``stop`` is set (or forever).
    Then it takes no more runs and waits for the running handlers to return (a drain).

    A run whose worker stops renewing its lease (killed, paused, cut off from Redis) for
    ``redelivery_timeout`` seconds is handed to another worker: ``handler`` may be called
    again for a run that an earlier worker began. A handler that raises is logged; its run is
    not queued again. Raises ``QueueUnavailableError`` if Redis cannot be reached at start;
    an outage later is waited out (docket reconnects).
    """
    _checked(url)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency is a whole number of runs, 1 or more; got {concurrency!r}")
    if not redelivery_timeout > 0:
        raise ValueError(f"redelivery_timeout is seconds, more than 0; got {redelivery_timeout!r}")
    await _check_reachable(url)

    async def run(execution: Execution = _EXECUTION) -> None:
        token = _HANDLING.set(execution.key)
        try:
            await handler(execution.key)
        except Exception:
            _log.exception("run %s: its handler failed", execution.key)
        finally:
            _HANDLING.reset(token)

    consumer = f"{socket.gethostname()}#{os.getpid()}#{uuid.uuid4().hex[:8]}"
    async with Docket(name=name, url=url) as docket:
        docket.register(run, names=[TASK])
        renewal = None
        if urlsplit(url).scheme not in ("memory", "redis+sentinel"):
            renewal = _Renewal(url, docket, consumer, redelivery_timeout)
        try:
            async with Worker(
                docket,
                name=consumer,
                concurrency=concurrency,
                redelivery_timeout=timedelta(seconds=redelivery_timeout),
                minimum_check_interval=timedelta(milliseconds=100),
                schedule_automatic_tasks=False,
            ) as worker:
                runner = asyncio.create_task(worker.run_forever(), name=f"queue {name}")
                if renewal is not None:
                    renewal.start()
                waits: set[asyncio.Future[Any]] = {runner}
                if stop is not None:
                    waits.add(asyncio.ensure_future(stop.wait()))
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for waiting in waits - {runner}:
                        waiting.cancel()
                # Leaving the worker's context stops it taking runs and waits for the drain.
            await runner
        finally:
            if renewal is not None:
                await asyncio.to_thread(renewal.stop)
