"""A RedisSaver's script calls on connections of its own, with as few client layers as it can.

redis-py's ``Script.__call__`` goes through ``execute_command``, the pool's checks and
metrics, a retry wrapper and a generic argument packer: on a loopback server that is about
as long as the round trip itself. The saver already retries what is transient itself
(``_io.attempts``), sends only bytes, str and int, and reads every reply whole, so on a
plain ``redis.Redis`` it packs the ``EVALSHA`` itself and sends it on a redis-py
``Connection`` (made with the client's own connection settings: address, credentials, TLS,
timeouts, protocol) that it keeps for the next call. With ``hiredis`` installed (the
``graph-agent[hiredis]`` extra) the command is packed by hiredis's C packer and, as redis-py
chooses for its connections, the reply parsed by hiredis's C parser. Anything else (a cluster client, a
client with client-side caching or a single connection, a subclass or instance that
overrides ``execute_command``, an ``execute_command`` wrapped by an instrumentation
library) goes through redis-py's ``Script`` unchanged.

On a plain ``redis.asyncio.Redis`` (``AsyncScriptCalls``) the saver packs the ``EVALSHA``
the same way and sends it on a connection of the client's own pool that it keeps between
calls (at most ``KEEP``; more are given back after the call), skipping the client's
``execute_command``, its retry wrapper and the pool's lock, metrics and per-call health
check. Its connections are not made by the saver, as the sync ones are, because asyncio ones
must be closed on their loop and warn when collected open: taken from the pool, they are
closed with the client by whoever owns it (``client.aclose()`` closes the pool's connections
in use too), and they count toward the pool's ``max_connections``. It is safe where the sync
path is, and for the same reasons; besides, a call cancelled while it waits for its reply
leaves a connection redis-py has already closed (its ``read_response`` and
``send_packed_command`` disconnect on any ``BaseException``), which the next call opens
again; a connection the pool marks for reconnection (a server's maintenance notice) is
reconnected before it is used; and a client with a ``credential_provider`` keeps redis-py's
path (streaming credentials re-authenticate a connection when it goes back to the pool,
which a kept one would not).

Both are written once: ``script_call`` is the logic (the ``EVALSHA``, the ``EVAL`` after it,
when to give a connection back and when to close it), a generator of effects; each kind of
calls drives it (``perform``, ``aperform``) and does its steps on its own connections.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from ..effects import Effect, Steps, aperform, perform

__all__ = [
    "KEEP",
    "AsyncScriptCalls",
    "ScriptCalls",
    "lean_async_pool",
    "lean_pool",
    "script_call",
]

KEEP = 8
"""Connections an ``AsyncScriptCalls`` keeps between calls at most (and at most a quarter of
its pool's ``max_connections``)."""

_log = logging.getLogger("checkpoint.redis")

_CRLF = b"\r\n"


def pack_command(parts: Sequence[bytes | str | int], encoding: str, errors: str) -> bytes:
    """One command in RESP (an array of bulk strings)."""
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        if type(part) is bytes:
            data = part
        elif type(part) is str:
            data = part.encode(encoding, errors)
        elif type(part) is int:
            data = b"%d" % part
        else:
            raise TypeError(
                f"a Redis command argument must be bytes, str or int, got {type(part)!r}"
            )
        out += (b"$%d\r\n" % len(data), data, _CRLF)
    return b"".join(out)


Packer = Callable[[tuple[Any, ...]], bytes]


def packer(encoding: str, errors: str) -> Packer:
    """The fastest packer that encodes text as ``encoding`` with ``errors``: hiredis's C
    one when it is installed and the text is UTF-8, strict (as hiredis encodes it)."""
    if encoding.lower().replace("_", "-") in ("utf-8", "utf8") and errors == "strict":
        try:
            from hiredis import pack_command as c_pack
        except ImportError:
            pass
        else:
            return cast(Packer, c_pack)
    return lambda parts: pack_command(parts, encoding, errors)


def lean_pool(client: Any) -> Any:
    """``client``'s connection pool when the saver may use connections of its own on it,
    else ``None``."""
    try:
        import redis
        import redis.connection as connection
    except ImportError:  # pragma: no cover - the saver needs redis-py anyway
        return None
    method = type(client).__dict__.get("execute_command", redis.Redis.execute_command)
    if (
        not isinstance(client, redis.Redis)
        or method is not redis.Redis.execute_command
        or hasattr(method, "__wrapped__")  # wrapt / functools.wraps instrumentation
        or "execute_command" in vars(client)
        or getattr(client, "connection", None) is not None  # single_connection_client
    ):
        return None
    pool: Any = getattr(client, "connection_pool", None)
    if type(pool) not in (connection.ConnectionPool, connection.BlockingConnectionPool):
        return None
    if getattr(pool, "cache", None) is not None or pool.connection_class not in (
        connection.Connection,
        connection.SSLConnection,
        connection.UnixDomainSocketConnection,
    ):
        return None
    return pool


def script_call(
    script: Any,
    ascript: Any,
    keys: Sequence[str],
    args: Sequence[Any],
    meanwhile: Callable[[], object] | None,
) -> Steps[Any]:
    """One of the saver's Lua scripts run with ``keys`` and ``args``: ``script`` (registered
    on the sync client) in a sync run, ``ascript`` (on the asyncio one) in an async one. The
    logic of both kinds of calls, as effects the driver's context performs (a ``RedisSaver``:
    its ``_calls`` in a sync run, its ``_acalls`` in an async one): the ``EVALSHA``, then
    the ``EVAL`` when the server has not cached the script (yet, or any more); on a client
    that is not lean, redis-py's ``Script``. ``meanwhile`` runs once, while the server runs
    the script (before the call on redis-py's path); an error it raises is raised after the
    reply was read."""
    held = yield _TAKE
    if held is None:  # not lean
        if meanwhile is not None:
            meanwhile()
        return (yield _Script(script, ascript, keys, args))
    import redis

    source = script if script is not None else ascript  # the same Lua, the same sha
    body: tuple[Any, ...] = ("EVALSHA", source.sha, len(keys), *keys, *args)
    while True:  # the reply is read whole before the connection is given back
        failed: Exception | None = None
        try:
            yield _Step("send", held, body)
            if meanwhile is not None:
                try:
                    meanwhile()
                except Exception as error:  # the reply is still read: the link stays sound
                    failed = error
            reply = yield _Step("read", held)
        except redis.exceptions.ResponseError as error:  # the whole reply was read
            yield _Step("give_back", held)
            if body[0] != "EVALSHA" or not isinstance(error, redis.exceptions.NoScriptError):
                raise
            # not cached on this server (yet, or any more); ``meanwhile`` has run
            body, meanwhile = ("EVAL", source.script, len(keys), *keys, *args), None
            held = yield _TAKE
            continue
        except BaseException:
            yield _Step("close_failed", held)
            raise
        yield _Step("give_back", held)
        if failed is not None:
            raise failed
        return reply


class _Step(Effect):
    """A step of ``script_call`` on the saver's own connections, ``name(*args)`` done by the
    driver's context (a ``RedisSaver``): by its ``_calls`` in a sync run, its ``_acalls``
    in an async one (see ``_Calls``)."""

    __slots__ = ("args", "name")

    def __init__(self, name: str, *args: Any) -> None:
        self.name = name
        self.args = args

    def run(self, context: Any) -> Any:
        return getattr(context._calls, self.name)(*self.args)

    def arun(self, context: Any) -> Awaitable[Any]:
        return getattr(context._acalls, self.name)(*self.args)  # type: ignore[no-any-return]


_TAKE = _Step("take")


class _Script(Effect):
    """redis-py's path: ``script(keys=..., args=...)`` called in a sync run, ``ascript``'s
    awaited in an async one."""

    __slots__ = ("args", "ascript", "keys", "script")

    def __init__(self, script: Any, ascript: Any, keys: Sequence[str], args: Sequence[Any]) -> None:
        self.script = script
        self.ascript = ascript
        self.keys = keys
        self.args = args

    def run(self, context: Any) -> Any:
        return self.script(keys=self.keys, args=self.args)

    def arun(self, context: Any) -> Awaitable[Any]:
        return self.ascript(keys=self.keys, args=self.args)  # type: ignore[no-any-return]


class _Only:
    """The context of a call made on one calls object directly (``ScriptCalls.call``)."""

    __slots__ = ("_acalls", "_calls")

    def __init__(self, calls: ScriptCalls | None, acalls: AsyncScriptCalls | None) -> None:
        self._calls = calls
        self._acalls = acalls


class _Calls:
    """What both kinds of calls keep: the pool (``None``: redis-py's path), the idle
    connections, and the packer of the pool's encoding. Each kind adds the steps
    ``script_call`` asks for: ``take`` a connection (``None`` when not lean; what it returns
    is handed to the other steps), ``send`` a command on it, ``read`` the reply,
    ``give_back`` the connection, ``close_failed`` it."""

    __slots__ = ("_idle", "_pack", "_pool")

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._idle: list[Any] = []
        encoder = pool.get_encoder() if pool is not None else None
        self._pack = packer(
            getattr(encoder, "encoding", "utf-8"), getattr(encoder, "encoding_errors", "strict")
        )

    @property
    def lean(self) -> bool:
        """Whether calls skip the client's command layers, on connections the saver keeps."""
        return self._pool is not None


class ScriptCalls(_Calls):
    """Runs a saver's Lua scripts on one sync client: ``call(script, keys, args)``.

    Thread-safe: each call takes an idle connection of its own (or makes one), and gives it
    back only after reading the whole reply; a connection that failed is closed, never
    reused. After a fork the child makes new connections.
    """

    __slots__ = ("_pid",)

    def __init__(self, client: Any) -> None:
        super().__init__(lean_pool(client))
        self._pid = os.getpid()

    def call(
        self,
        script: Any,
        keys: Sequence[str],
        args: Sequence[Any],
        meanwhile: Callable[[], object] | None = None,
    ) -> Any:
        """``script`` (a redis-py ``Script``) run with ``keys`` and ``args``; redis-py's
        errors as it raises them. ``meanwhile`` (work that does not need the reply) runs
        while the server runs the script: after the command is sent, before the reply is
        read (before the call on redis-py's path); an error it raises is raised after the
        reply was read."""
        return perform(script_call(script, None, keys, args, meanwhile), _Only(self, None))

    def take(self) -> Any:
        if self._pool is None:
            return None
        if self._pid != os.getpid():  # a forked child: the parent's sockets are not ours
            self._idle, self._pid = [], os.getpid()
        try:
            return self._idle.pop()
        except IndexError:
            pool = self._pool
            return pool.connection_class(**pool.connection_kwargs)

    def send(self, conn: Any, body: tuple[Any, ...]) -> None:
        conn.send_packed_command((self._pack(body),))

    def read(self, conn: Any) -> Any:
        return conn.read_response()

    def give_back(self, conn: Any) -> None:
        self._idle.append(conn)

    def close_failed(self, conn: Any) -> None:
        conn.disconnect()

    def close(self) -> None:
        """Close the idle connections (a call in flight closes its own when it fails)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.disconnect()


def lean_async_pool(client: Any) -> Any:
    """``client``'s connection pool when the saver may send on connections it keeps from it
    (a plain ``redis.asyncio.Redis``, see the module's docstring), else ``None``."""
    try:
        import redis.asyncio
        import redis.asyncio.connection as connection
    except ImportError:  # pragma: no cover - the saver needs redis-py anyway
        return None
    base = redis.asyncio.Redis
    method = getattr(type(client), "execute_command", None)
    if (
        not isinstance(client, base)
        or method is not base.execute_command
        or hasattr(method, "__wrapped__")  # wrapt / functools.wraps instrumentation
        or "execute_command" in vars(client)
        or getattr(client, "single_connection_client", False)
        or getattr(client, "connection", None) is not None
    ):
        return None
    pool: Any = getattr(client, "connection_pool", None)
    if type(pool) not in (connection.ConnectionPool, connection.BlockingConnectionPool):
        return None
    if (
        pool.connection_class
        not in (
            connection.Connection,
            connection.SSLConnection,
            connection.UnixDomainSocketConnection,
        )
        or pool.connection_kwargs.get("credential_provider") is not None
    ):
        return None
    return pool


class AsyncScriptCalls(_Calls):
    """Runs a saver's Lua scripts on one ``redis.asyncio`` client:
    ``await call(script, keys, args)``.

    Calls on one event loop only (the client's): each takes a kept connection (or one from
    the pool), and gives it back after reading the whole reply; a call that failed or was
    cancelled gives back a closed connection, which the next call opens again. Kept
    connections of another loop (a forked child runs one of its own) are left to the pool
    they came from. ``aclose`` gives the kept ones back to the pool.
    """

    __slots__ = ("_keep", "_loop")

    def __init__(self, client: Any) -> None:
        pool = lean_async_pool(client)
        super().__init__(pool)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._keep = min(KEEP, int(pool.max_connections) // 4) if pool is not None else 0

    def call(
        self,
        script: Any,
        keys: Sequence[str],
        args: Sequence[Any],
        meanwhile: Callable[[], object] | None = None,
    ) -> Awaitable[Any]:
        """What to await for ``script`` (a redis-py ``AsyncScript``) run with ``keys`` and
        ``args``: its reply, or redis-py's error as it raises it. ``meanwhile`` as for
        ``ScriptCalls.call``: it runs while the server runs the script."""
        return aperform(script_call(None, script, keys, args, meanwhile), _Only(None, self))

    async def take(self) -> tuple[Any, list[Any]] | None:
        """A connection, and the list of kept ones it goes back to."""
        if self._pool is None:
            return None
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # kept on another loop (a forked child runs a loop of its own too): not this
            # loop's, left to the pool they came from
            self._idle, self._loop = [], loop
        idle = self._idle
        return (idle.pop() if idle else await self._pool.get_connection()), idle

    async def send(self, held: tuple[Any, list[Any]], body: tuple[Any, ...]) -> None:
        conn = held[0]
        should_reconnect = getattr(conn, "should_reconnect", None)
        if should_reconnect is not None and should_reconnect():  # the pool marked it
            await conn.disconnect()
        await conn.send_packed_command(self._pack(body), bool(conn.health_check_interval))

    def read(self, held: tuple[Any, list[Any]]) -> Awaitable[Any]:
        return held[0].read_response()  # type: ignore[no-any-return]

    async def give_back(self, held: tuple[Any, list[Any]]) -> None:
        """Kept, while fewer than ``KEEP`` are and the kept ones are still the list it
        came from (not given back by ``aclose`` since); else back to the pool."""
        conn, idle = held
        if len(idle) < self._keep and idle is self._idle:
            idle.append(conn)
        else:
            await self._release(conn)

    async def close_failed(self, held: tuple[Any, list[Any]]) -> None:
        """redis-py has closed it already (on any ``BaseException``): make sure, and give
        it back closed."""
        try:
            await held[0].disconnect(nowait=True)
        except Exception:
            _log.debug("closing a failed script connection failed", exc_info=True)
        await self.give_back(held)

    async def aclose(self) -> None:
        """Give the kept connections back to the client's pool (closing the client closes
        them). Kept ones of another loop are left to the pool."""
        idle, self._idle = self._idle, []
        if self._loop is not asyncio.get_running_loop():
            return
        for conn in idle:
            await self._release(conn)

    async def _release(self, conn: Any) -> None:
        try:
            await self._pool.release(conn)
        except Exception:  # the pool was reset (a fork): the connection is not its own
            _log.debug("a script connection was not given back to its pool", exc_info=True)
