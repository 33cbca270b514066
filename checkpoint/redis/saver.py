"""A saver in Redis (plain Redis 7 or Valkey, no modules; single node or cluster).

It follows ``checkpoint/_savers/retention.py``'s rules (write order, head, retention) and stores
checkpoints as ``checkpoint/_savers/index.py`` describes, here in Lua: ``_lua.WRITE`` is the ``put``
and its retention, ``_lua.READ`` the ``get``, ``_lua.HISTORY`` the ``list``.
"""

from __future__ import annotations

import asyncio
import builtins
import inspect
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from .._savers.closing import Closing
from .._savers.head import CachedHead, HeadCache
from .._savers.head_read import HeldWrite
from .._savers.index import header_of
from .._savers.leases import check_fence
from ..base import BaseCheckpointSaver, Checkpoint, CheckpointDelta
from ..effects import Steps, aperform, perform
from ..errors import CheckpointConflictError, CheckpointError, CheckpointNotFoundError
from ..serde import Serializer
from . import _lua
from ._errors import where_of
from ._eviction import check_policy
from ._history import HistoryPages
from ._io import Command, ScriptCall, attempts
from ._lean import AsyncScriptCalls, ScriptCalls
from ._leases import RedisLeases
from ._read import ReadAgain, read_reply, written_reply
from ._write import lease_lost, resend, write_args, written_or_resend

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "DEFAULT_SOCKET_TIMEOUT", "RedisSaver"]

DEFAULT_SOCKET_TIMEOUT = 5.0
"""Seconds ``RedisSaver.from_url`` lets a command wait for its reply."""
DEFAULT_CONNECT_TIMEOUT = 5.0
"""Seconds ``RedisSaver.from_url`` lets a connection take to open."""

_PARTS = ("head", "meta", "cps", "idx", "vals", "items", "ids")
_KEY_CACHE = 1024  # threads whose keys are kept made


def _thread_tag(thread_id: str) -> str:
    """The thread's hash tag: the id itself; an id with braces (which would cut the tag short)
    is written as ``{`` plus its hex form, which no id without braces can produce."""
    if "{" in thread_id or "}" in thread_id:
        return "{" + thread_id.encode().hex()
    return thread_id


class RedisSaver(RedisLeases, BaseCheckpointSaver, Closing):
    """Checkpoints in Redis, incrementally: a step's write is one Lua script call (one round
    trip) that stores only its delta (list items appended to per-thread lists, changed
    values) and a small per-checkpoint index, and moves the thread's head only if it is
    still the writer's parent (``CheckpointConflictError`` otherwise, nothing written).
    Reading a checkpoint is one round trip however long the thread.

    All keys of a thread share the hash tag ``{<thread_id>}`` (eight keys per thread, see
    docs/redis.md), so the saver works on Redis Cluster. ``ttl`` (seconds) is applied to
    every key of the thread on each write (and on each read with ``refresh_on_read``);
    ``max_retained`` keeps only the newest writes of each thread (``_savers.retention``'s rules
    for every saver). Values are msgpack through the type registry, never pickle.

    ``client`` is a ``redis.Redis`` / ``redis.RedisCluster`` (sync methods; async ones run
    in worker threads) or a ``redis.asyncio`` client (async methods only); ``from_url``
    makes both, with bounded socket timeouts. A lost or refused connection is retried with
    backoff (``read_retries`` times for a read, ``write_retries`` for a write: the write
    script is idempotent); a timeout or refused credentials are not. What still fails raises
    ``CheckpointUnavailableError`` (``CheckpointTimeoutError``, ``CheckpointAuthError``)
    naming the server, never its password, and the thread. A write either happened whole or
    not at all. Stored data that is corrupt or partly evicted raises ``CheckpointDataError``
    naming the thread. On first use the saver checks the server's ``maxmemory-policy`` and
    warns (``EvictionPolicyWarning``) when it may evict checkpoints.

    Leases (``BaseCheckpointSaver``) are one key per thread with the thread's tag
    (``lease_key``), expiring by ``PX``; a fenced write checks it in its own script.
    """

    def __init__(
        self,
        client: Any = None,
        *,
        async_client: Any = None,
        key_prefix: str = "graph_agent",
        ttl: int | None = None,
        refresh_on_read: bool = False,
        max_retained: int | None = None,
        serializer: Serializer | None = None,
        read_retries: int = 3,
        write_retries: int = 3,
        backoff: float = 0.05,
        sleep: Callable[[float], None] = time.sleep,
        cache_threads: int = 128,
    ) -> None:
        if client is None and async_client is None:
            raise ValueError(
                "RedisSaver needs a client: RedisSaver(redis.Redis(...)) or RedisSaver.from_url(url)"
            )
        if client is not None and _is_async_client(client):
            client, async_client = None, client
        for name, value in (("ttl", ttl), ("max_retained", max_retained)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(
                    f"RedisSaver({name}=...) must be a positive int or None, got {value!r}"
                )
        for c in (client, async_client):
            if c is not None and _decodes_responses(c):
                raise ValueError(
                    "the Redis client decodes responses to str, but checkpoints are binary: create it "
                    "with decode_responses=False (the default)"
                )
        self.client = client
        self._key_cache: dict[str, builtins.list[str]] = {}  # thread id -> its keys
        self.key_prefix = key_prefix
        self.ttl = ttl
        self.refresh_on_read = refresh_on_read
        self.max_retained = max_retained
        self.serializer = serializer or Serializer()
        self._heads = HeadCache(cache_threads, self.serializer)
        self.read_retries = read_retries
        self.write_retries = write_retries
        self.backoff = backoff
        self._sleep = sleep
        self._write = client.register_script(_lua.WRITE) if client is not None else None
        self._read = client.register_script(_lua.READ) if client is not None else None
        self._list = client.register_script(_lua.HISTORY) if client is not None else None
        self._writes = client.register_script(_lua.WRITES) if client is not None else None
        self._lease = client.register_script(_lua.LEASE) if client is not None else None
        self._calls = ScriptCalls(client)  # the sync scripts' calls, on lean connections
        self._use_async_client(async_client)
        self._policy_checked: set[int] = set()  # ids of the clients whose policy was checked
        self._async_factory: Callable[[], Any] | None = None
        self._async_loop: asyncio.AbstractEventLoop | None = None
        self._owns_clients = False  # from_url made them: close() closes them

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        cluster: bool = False,
        socket_timeout: float | None = DEFAULT_SOCKET_TIMEOUT,
        socket_connect_timeout: float | None = DEFAULT_CONNECT_TIMEOUT,
        **options: Any,
    ) -> RedisSaver:
        """A saver for ``redis://``, ``rediss://`` (TLS) or ``unix://`` URLs, with AUTH in the
        URL if needed; ``cluster=True`` for a Redis Cluster. Makes a sync and an async client.

        ``socket_timeout`` bounds how long one command waits for Redis (a stalled server
        fails a read or write with ``CheckpointTimeoutError`` after that long), and
        ``socket_connect_timeout`` how long a connection takes to open; ``None`` waits for
        ever. The URL's own ``?socket_timeout=`` wins. A single-node client does not retry
        on its own: the saver retries (``read_retries``, ``write_retries``); a cluster
        client keeps redis-py's retries, which follow failovers. ``options`` go to
        ``RedisSaver(...)``.
        """
        import redis
        import redis.asyncio
        from redis.asyncio.retry import Retry as AsyncRetry
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        timeouts: dict[str, Any] = {
            "socket_timeout": socket_timeout,
            "socket_connect_timeout": socket_connect_timeout,
        }
        make_async: Callable[[], Any] = (
            (lambda: redis.asyncio.RedisCluster.from_url(url, **timeouts))
            if cluster
            else (
                lambda: redis.asyncio.Redis.from_url(
                    url, retry=AsyncRetry(NoBackoff(), 0), **timeouts
                )
            )
        )
        sync = (
            redis.RedisCluster.from_url(url, **timeouts)
            if cluster
            else redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **timeouts)
        )
        saver = cls(sync, async_client=make_async(), **options)
        saver._async_factory = make_async  # its own async client follows the running loop
        saver._owns_clients = True
        return saver

    def _use_async_client(self, client: Any) -> None:
        """Run the async methods on ``client`` (``None``: in worker threads)."""
        self.async_client = client
        self._awrite = client.register_script(_lua.WRITE) if client is not None else None
        self._aread = client.register_script(_lua.READ) if client is not None else None
        self._alist = client.register_script(_lua.HISTORY) if client is not None else None
        self._awrites = client.register_script(_lua.WRITES) if client is not None else None
        self._alease = client.register_script(_lua.LEASE) if client is not None else None
        self._acalls = AsyncScriptCalls(client)  # the async scripts' calls, lean ones too

    def close(self) -> None:
        """Close the saver's own connections, and the sync client ``from_url`` made (a
        client passed in stays open, as its owner's). Safe to call twice."""
        self._calls.close()
        if self._owns_clients and self.client is not None:
            self.client.close()

    async def aclose(self) -> None:
        """Close both clients ``from_url`` made (clients passed in stay open); the
        connections the saver kept from the async client's pool go back to it."""
        self.close()
        await self._acalls.aclose()
        client, loop = self.async_client, self._async_loop
        if self._owns_clients and client is not None and loop in (None, asyncio.get_running_loop()):
            await client.aclose()

    def __repr__(self) -> str:
        where = where_of(self.client if self.client is not None else self.async_client)
        return f"RedisSaver({where}, key_prefix={self.key_prefix!r}, ttl={self.ttl}, max_retained={self.max_retained})"

    @property
    def key_prefix(self) -> str:
        """What every key of the saver starts with."""
        return self._key_prefix

    @key_prefix.setter
    def key_prefix(self, prefix: str) -> None:
        self._key_prefix = prefix
        self._key_cache.clear()

    def keys(self, thread_id: str) -> builtins.list[str]:
        """The seven keys that hold a thread, in the scripts' KEYS order."""
        return builtins.list(self._keys(thread_id))

    def _keys(self, thread_id: str) -> builtins.list[str]:
        """``keys(thread_id)``, made once for the threads used lately (not to be changed)."""
        keys = self._key_cache.get(thread_id)
        if keys is None:
            if len(self._key_cache) >= _KEY_CACHE:
                self._key_cache.clear()
            base = f"{self._key_prefix}:{{{_thread_tag(thread_id)}}}"
            keys = self._key_cache[thread_id] = [f"{base}:{part}" for part in _PARTS]
        return keys

    def lease_key(self, thread_id: str) -> str:
        """The key of the thread's lease (the thread's hash tag; not one of ``keys``)."""
        return f"{self._key_prefix}:{{{_thread_tag(thread_id)}}}:lease"

    # -- the operations, each written once (see _io.py) ----------------------------------------

    def _write_steps(
        self,
        checkpoint: Checkpoint,
        delta: CheckpointDelta | None,
        check_head: bool,
        client: Any,
        fence: str | None = None,
    ) -> Steps[None]:
        delta = current = delta if delta is not None else CheckpointDelta.full(checkpoint.values)
        header = self.serializer.dumps(header_of(checkpoint), key="<checkpoint header>")
        whole: builtins.list[str] = []
        base = checkpoint.parent_id or ""
        thread_id = checkpoint.thread_id
        keys = self._keys(thread_id)
        if fence is not None:  # the lease as KEYS[8], the token as the last ARGV
            keys = [*keys, self.lease_key(thread_id)]
        if id(client) not in self._policy_checked:
            yield from check_policy(self._policy_checked, client, self.ttl, thread_id, "write")
        held = HeldWrite(self._heads, checkpoint, delta)  # the private delta made meanwhile
        for _ in range(len(current.appended) + 2):
            args = write_args(
                self.serializer,
                self.ttl,
                self.max_retained,
                checkpoint,
                current,
                check_head,
                whole,
                base,
                header,
            )
            if fence is not None:
                args.append(fence)
            call = ScriptCall(self._write, self._awrite, keys, args, held.prepare)
            reply = yield from attempts(
                call, client, thread_id, "write", self.write_retries, self.backoff, self._sleep
            )
            again = written_or_resend(checkpoint, reply, fence)
            if again is None:
                written_reply(held, header, reply)
                return
            current, whole, base = resend(checkpoint, current, whole, base, again)
        raise CheckpointError(
            f"could not write checkpoint {checkpoint.id!r} of thread '{thread_id}'"
        )

    def _writes_steps(
        self, checkpoint: Checkpoint, check_head: bool, client: Any, fence: str | None = None
    ) -> Steps[None]:
        """``put_writes``: one script call that replaces the checkpoint's stored header."""
        header = self.serializer.dumps(header_of(checkpoint), key="<checkpoint header>")
        thread_id, cid = checkpoint.thread_id, checkpoint.id
        if id(client) not in self._policy_checked:
            yield from check_policy(self._policy_checked, client, self.ttl, thread_id, "write")
        args = [cid, "1" if check_head else "0", header, self.ttl or 0]
        keys = self._keys(thread_id)
        if fence is not None:  # the lease as KEYS[8], the token as ARGV[5]
            keys, args = [*keys, self.lease_key(thread_id)], [*args, fence]
        call = ScriptCall(self._writes, self._awrites, keys, args)
        reply = yield from attempts(
            call, client, thread_id, "write", self.write_retries, self.backoff, self._sleep
        )
        status = int(reply[0])
        if status == 5:
            assert fence is not None, "only a fenced write is refused for its lease"
            raise lease_lost(thread_id, fence, reply[1])
        if status == 0:
            head = reply[1].decode() if isinstance(reply[1], bytes) else str(reply[1])
            raise CheckpointConflictError.moved(thread_id, cid, head or None)
        if status == 2:
            raise CheckpointNotFoundError.for_writes(thread_id, cid)
        self._heads.rewrite_header(thread_id, cid, header)

    def _read_args(
        self, thread_id: str, checkpoint_id: str | None, retry: bool
    ) -> tuple[builtins.list[Any], CachedHead | None]:
        """The read script's arguments, and the head they name as held (``None`` on a retry,
        or when the checkpoint asked for is not the head and not the one held)."""
        held = None if retry else self._heads.entry(thread_id)
        if held is not None and checkpoint_id is not None and checkpoint_id != held.id:
            held = None
        refresh = self.ttl if (self.ttl and self.refresh_on_read) else 0
        return [checkpoint_id or "", refresh, held.id if held is not None else ""], held

    def _read_steps(
        self, thread_id: str, checkpoint_id: str | None, client: Any
    ) -> Steps[Checkpoint | None]:
        keys = self._keys(thread_id)
        if id(client) not in self._policy_checked:
            yield from check_policy(self._policy_checked, client, self.ttl, thread_id, "read")
        for retry in (False, True):
            args, held = self._read_args(thread_id, checkpoint_id, retry)
            call = ScriptCall(self._read, self._aread, keys, args)
            reply = yield from attempts(
                call, client, thread_id, "read", self.read_retries, self.backoff, self._sleep
            )
            if not reply and checkpoint_id is None:
                self._heads.forget(thread_id)
            keep = checkpoint_id is None or held is not None
            try:
                return read_reply(self.serializer, self._heads, thread_id, reply, held, keep)
            except ReadAgain:
                continue
        raise AssertionError("a read holding nothing is never read again")  # pragma: no cover

    def _pages(self, thread_id: str, limit: int | None, before: str | None) -> HistoryPages:
        ttl = self.ttl if (self.ttl and self.refresh_on_read) else 0
        return HistoryPages(self.serializer, thread_id, limit, before, ttl)

    def _checked(self, client: Any, thread_id: str) -> Steps[None]:
        """A listing's eviction check, before its first page."""
        if id(client) not in self._policy_checked:
            yield from check_policy(self._policy_checked, client, self.ttl, thread_id, "read")

    def _page_steps(
        self, keys: builtins.list[str], pages: HistoryPages, client: Any, thread_id: str
    ) -> Steps[Iterator[Checkpoint]]:
        """The next page of a listing."""
        call = ScriptCall(self._list, self._alist, keys, pages.args())
        reply = yield from attempts(
            call, client, thread_id, "list", self.read_retries, self.backoff, self._sleep
        )
        return pages.take(reply)

    def _delete_steps(self, thread_id: str, client: Any) -> Steps[None]:
        self._heads.forget(thread_id)
        call = Command(client.delete, *self._keys(thread_id))
        yield from attempts(
            call, client, thread_id, "delete", self.read_retries, self.backoff, self._sleep
        )

    # -- the public pairs: the sync client's perform, the async client's aperform ------------

    def put(
        self,
        checkpoint: Checkpoint,
        delta: CheckpointDelta | None = None,
        *,
        check_head: bool = True,
        fence: str | None = None,
    ) -> None:
        if self._write is None:
            raise CheckpointError("this RedisSaver has only an async client: use aput()")
        if fence is not None:
            check_fence("put", fence)
        perform(self._write_steps(checkpoint, delta, check_head, self.client, fence), self)

    async def aput(
        self,
        checkpoint: Checkpoint,
        delta: CheckpointDelta | None = None,
        *,
        check_head: bool = True,
        fence: str | None = None,
    ) -> None:
        if self._awrite is None:
            await super().aput(checkpoint, delta, check_head=check_head, fence=fence)
            return
        if fence is not None:
            check_fence("aput", fence)
        await self._aready()
        steps = self._write_steps(checkpoint, delta, check_head, self.async_client, fence)
        await aperform(steps, self)

    def put_writes(
        self, checkpoint: Checkpoint, *, check_head: bool = True, fence: str | None = None
    ) -> None:
        """The running step's record replaces ``checkpoint``'s (``BaseCheckpointSaver``), in
        one round trip."""
        if self._writes is None:
            raise CheckpointError("this RedisSaver has only an async client: use aput_writes()")
        if fence is not None:
            check_fence("put_writes", fence)
        perform(self._writes_steps(checkpoint, check_head, self.client, fence), self)

    async def aput_writes(
        self, checkpoint: Checkpoint, *, check_head: bool = True, fence: str | None = None
    ) -> None:
        if self._awrites is None:
            await super().aput_writes(checkpoint, check_head=check_head, fence=fence)
            return
        if fence is not None:
            check_fence("aput_writes", fence)
        await self._aready()
        await aperform(self._writes_steps(checkpoint, check_head, self.async_client, fence), self)

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The head (or ``checkpoint_id``), in one round trip. The head of a thread this
        saver read or wrote lately is held decoded: the script then sends only what it
        lacks (nothing, when the thread did not move)."""
        if self._read is None:
            raise CheckpointError("this RedisSaver has only an async client: use aget()")
        return perform(self._read_steps(thread_id, checkpoint_id, self.client), self)

    async def aget(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """``get`` on the async client (the same held heads)."""
        if self._aread is None:
            return await super().aget(thread_id, checkpoint_id)
        await self._aready()
        return await aperform(self._read_steps(thread_id, checkpoint_id, self.async_client), self)

    def list(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> Iterator[Checkpoint]:
        """The thread's checkpoints, newest first in the order they were written: one round
        trip per page of ``_history.PAGE`` checkpoints (``limit`` asks for no more),
        each list item and value sent and decoded once for the whole listing."""
        if self._list is None:
            raise CheckpointError("this RedisSaver has only an async client: use alist()")
        keys, pages = self._keys(thread_id), self._pages(thread_id, limit, before)
        perform(self._checked(self.client, thread_id), self)
        while not pages.done:
            yield from perform(self._page_steps(keys, pages, self.client, thread_id), self)

    async def alist(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> AsyncIterator[Checkpoint]:
        """The thread's checkpoints, newest first in the order they were written."""
        if self.async_client is None:
            async for checkpoint in super().alist(thread_id, limit=limit, before=before):
                yield checkpoint
            return
        await self._aready()
        keys, pages = self._keys(thread_id), self._pages(thread_id, limit, before)
        await aperform(self._checked(self.async_client, thread_id), self)
        while not pages.done:
            page = await aperform(self._page_steps(keys, pages, self.async_client, thread_id), self)
            for checkpoint in page:
                yield checkpoint

    def delete_thread(self, thread_id: str) -> None:
        if self.client is None:
            raise CheckpointError("this RedisSaver has only an async client: use adelete_thread()")
        perform(self._delete_steps(thread_id, self.client), self)

    async def adelete_thread(self, thread_id: str) -> None:
        if self.async_client is None:
            await super().adelete_thread(thread_id)
            return
        await self._aready()
        await aperform(self._delete_steps(thread_id, self.async_client), self)

    def stored_bytes(self, thread_id: str) -> int:
        """Bytes Redis reports for the thread's keys (``MEMORY USAGE``)."""
        if self.client is None:
            raise CheckpointError("stored_bytes needs the sync client")
        return sum(int(self.client.memory_usage(key) or 0) for key in self.keys(thread_id))

    # -- the async client's loop -------------------------------------------------------------

    async def _aready(self) -> None:
        """Load the async client's cluster slot map before its first command.

        ``redis.asyncio.RedisCluster`` (redis-py 8) routes commands that tasks send while it
        is not initialized yet to an arbitrary node; the MOVED replies make it re-initialize
        and close connections other tasks are using, so concurrent first calls (``gather``
        of ``ainvoke``) fail with ``AttributeError``. ``initialize()`` is locked, idempotent
        and free once done (no round trip), so every async call awaits it first.
        """
        loop = asyncio.get_running_loop()
        if self._async_factory is not None and self._async_loop is not loop:
            # An asyncio client belongs to the loop it first ran on: a saver made by from_url
            # makes a fresh one for each new loop (each asyncio.run), instead of failing.
            if self._async_loop is not None:
                self._use_async_client(self._async_factory())
            self._async_loop = loop
        initialize = getattr(self.async_client, "initialize", None)
        if initialize is not None:
            await initialize()


def _is_async_client(client: Any) -> bool:
    return inspect.iscoroutinefunction(getattr(client, "execute_command", None))


def _decodes_responses(client: Any) -> bool:
    try:
        return bool(client.get_connection_kwargs().get("decode_responses"))
    except Exception:
        return False
