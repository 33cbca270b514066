"""One MCP server's session, owned by a task on the provider's event loop.

The task (``run``) opens the transport and the ``ClientSession``, lists the tools, then waits
until the provider closes: everything the SDK enters (anyio task groups) is left by the task
that entered it. The server's messages reach the session through ``_forward``, which notices
when they stop (a crashed stdio server closes its stdout; a failed HTTP transport ends its
stream or its task group): the connection is then marked dead with what happened (the exit
code of a stdio server), the calls waiting on it fail at once, and later calls fail without
touching the session.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
from typing import Any

import anyio
import anyio.abc
import mcp.types

from ..errors import McpServerError
from . import _sdk
from ._servers import HttpServer, StdioServer, Transport

__all__ = ["Connection", "Server"]

_log = logging.getLogger("graph_agent.mcp")

Server = StdioServer | HttpServer

_CONNECTION_CLOSED = -32000  # mcp.types.CONNECTION_CLOSED
_CLOSE_WITHIN = 10.0  # seconds a session gets to close


class Connection:
    """One server: its session, its current tool list, and whether it is still there."""

    def __init__(self, server: Server, timeout: float, start_timeout: float = 30.0) -> None:
        self.server = server
        self.timeout = timeout  # a tool call's
        self.start_timeout = start_timeout  # the handshake's, and each listing's
        self.name = server.name or server.describe()
        self.tools: tuple[dict[str, Any], ...] = ()  # the server's tools as last listed, as JSON
        self.dead: str | None = None  # what happened to it: "exited with code 3", ...
        self.ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._session: Any = None
        self._transport: Transport | None = None
        self._stop: anyio.Event | None = None
        self._ended: anyio.Event | None = None  # set once the session ended, ``dead`` saying why
        self._task_group: anyio.abc.TaskGroup | None = None
        self._calls: set[anyio.CancelScope] = set()
        self._relist_wanted = False
        self._relisted: anyio.Event | None = None  # set when no re-listing is pending
        self._closing: anyio.CancelScope | None = None  # bounds closing the session

    def __repr__(self) -> str:
        return f"Connection({self.name!r}, {self.server.transport})"

    # -- the owner task ------------------------------------------------------------------------

    async def run(self) -> None:
        """Open the session, list the tools, set ``ready``, and keep the session until
        ``stop()`` or until the server goes away."""
        self._stop = anyio.Event()
        self._ended = anyio.Event()
        self._closing = anyio.CancelScope()
        try:
            with self._closing:
                await self._open_and_wait()
        except Exception as error:
            if not self.ready.done():
                self.ready.set_exception(self._start_failure(error))
            elif self.dead is None:
                ended = self._transport.exit_text() if self._transport is not None else None
                self._lost(ended or f"lost its connection ({_leaf(error)})")
        finally:
            if self.dead is None:
                self.dead = "was closed (its McpToolProvider was closed)"
            if not self.ready.done():  # cancelled while starting
                self.ready.set_exception(
                    McpServerError(f"MCP server '{self.name}': start cancelled", server=self.name)
                )
            self._cancel_calls()
            self._ended.set()
            _log.debug("MCP server '%s' session ended: %s", self.name, self.dead)

    async def _open_and_wait(self) -> None:
        from mcp import ClientSession

        assert self._stop is not None and self._closing is not None
        async with contextlib.AsyncExitStack() as stack:
            transport = await stack.enter_async_context(self.server.open(lambda: self.name))
            self._transport = transport
            await stack.enter_async_context(transport.read)  # closed even if never read
            send, receive = anyio.create_memory_object_stream[Any](0)
            await stack.enter_async_context(send)
            await stack.enter_async_context(receive)
            group = await stack.enter_async_context(anyio.create_task_group())
            self._task_group = group
            group.start_soon(self._forward, transport, send)
            session = await stack.enter_async_context(
                ClientSession(
                    receive,
                    transport.write,
                    # requests without a timeout of their own (the handshake, listings);
                    # a tool call passes the provider's ``timeout``
                    read_timeout_seconds=_sdk.seconds(self.start_timeout),
                    message_handler=self._on_message,
                )
            )
            initialized = _sdk.wire(await session.initialize())
            if self.server.name is None:
                self.name = initialized["serverInfo"]["name"]
            self._session = session
            await self._list()
            _log.info(
                "MCP server '%s' connected over %s: %d tools",
                self.name,
                self.server.transport,
                len(self.tools),
            )
            self.ready.set_result(None)
            await self._stop.wait()
            group.cancel_scope.cancel()
            # Closing (a stdio server gets 2 s to exit, then is terminated; an HTTP session
            # is ended with a DELETE) may take a while, but not forever.
            self._closing.deadline = anyio.current_time() + _CLOSE_WITHIN

    def stop(self) -> None:
        """Close the session (on the provider's loop); calls still waiting fail at once."""
        if self.dead is None:
            self.dead = "was closed (its McpToolProvider was closed)"
        self._cancel_calls()
        if self._stop is not None:
            self._stop.set()

    async def _forward(self, transport: Transport, send: Any) -> None:
        """Pass the server's messages to the session; when they end while the session is
        open, the server went away: say what happened and fail its calls."""
        async with send:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                async for message in transport.read:
                    await send.send(message)
            if self.dead is None:
                self._lost(await transport.ended())

    def _lost(self, what: str) -> None:
        """The server went away (the provider did not close it)."""
        if self.dead is not None:
            return
        self.dead = what
        if self.ready.done():
            tail = self._transport.stderr_tail(5) if self._transport is not None else []
            _log.warning(
                "MCP server '%s' %s; its tools fail until a new McpToolProvider is opened%s",
                self.name,
                what,
                "".join(f"\n  stderr: {line}" for line in tail),
            )
        self._cancel_calls()
        if self._stop is not None:
            self._stop.set()

    def _cancel_calls(self) -> None:
        for scope in list(self._calls):
            scope.cancel()

    def _start_failure(self, error: Exception) -> McpServerError:
        what = self.dead or _leaf(error)
        if isinstance(error, McpServerError):
            what = str(error)
        elif _has_code(error, _sdk.REQUEST_TIMEOUT):
            what = (
                f"it did not answer within {self.start_timeout:g} s while starting "
                "(McpToolProvider(start_timeout=...))"
            )
        tail = self._transport.stderr_tail(10) if self._transport is not None else []
        details = "".join(f"\n  stderr: {line}" for line in tail)
        where = self.server.transport
        if self.server.name is not None:
            where = f"{where}: {self.server.describe()}"
        return McpServerError(
            f"could not start MCP server '{self.name}' ({where}): {what}{details}",
            server=self.name,
        )

    # -- the tool list -------------------------------------------------------------------------

    async def _on_message(self, message: Any) -> None:
        import mcp.types

        if isinstance(message, Exception):
            _log.debug("MCP server '%s' transport error: %s", self.name, _leaf(message))
            return
        notification = getattr(message, "root", message)  # 1.x wraps it in a ServerNotification
        if isinstance(notification, mcp.types.ToolListChangedNotification):
            # This runs inside the session's receive loop: listing here would wait on itself.
            self._relist_wanted = True
            idle = self._relisted is None or self._relisted.is_set()
            if idle and self._task_group is not None:
                self._relisted = anyio.Event()
                self._task_group.start_soon(self._relist, self._relisted)

    async def _relist(self, relisted: anyio.Event) -> None:
        try:
            while self._relist_wanted:
                self._relist_wanted = False
                await self._list()
        except Exception as error:
            _log.warning("MCP server '%s': could not list its tools again: %s", self.name, error)
        finally:
            relisted.set()

    async def _list(self) -> None:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params = mcp.types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = _sdk.wire(await self._session.list_tools(params=params))
            tools.extend(page["tools"])
            cursor = page.get("nextCursor") or None
            if cursor is None:
                break
        self.tools = tuple(tools)
        _log.debug(
            "MCP server '%s' lists %d tools: %s", self.name, len(tools), [t["name"] for t in tools]
        )

    # -- calls ---------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call ``tool``: its result as JSON. Raises ``McpServerError`` when the server is gone,
        goes away during the call, or does not answer within the timeout. If the call changed
        the server's tools, returns once the new list is in."""
        if self.dead is not None:
            raise McpServerError(
                f"MCP server '{self.name}' {self.dead}; tool '{tool}' was not called",
                server=self.name,
            )
        timeout = _sdk.seconds(self.timeout)
        # The session times the answer out; the deadline also bounds sending the request.
        with anyio.CancelScope(deadline=anyio.current_time() + self.timeout + 5) as scope:
            self._calls.add(scope)
            try:
                result = await self._session.call_tool(
                    tool, arguments, read_timeout_seconds=timeout
                )
                if self._relisted is not None:
                    await self._relisted.wait()
                return _sdk.wire(result)
            except _sdk.ProtocolError as error:
                code = error.error.code
                if code == _sdk.REQUEST_TIMEOUT:
                    raise self._timed_out(tool) from error
                if code == _CONNECTION_CLOSED or self.dead is not None:
                    await self._why_ended()
                    raise self._gone(tool) from error
                raise McpServerError(
                    f"MCP server '{self.name}' refused tool '{tool}': {error}", server=self.name
                ) from error
            except (anyio.ClosedResourceError, anyio.BrokenResourceError) as error:
                await self._why_ended()
                raise self._gone(tool) from error
            finally:
                self._calls.discard(scope)
        if self.dead is not None:  # cancelled by _lost() or stop()
            raise self._gone(tool)
        raise self._timed_out(tool)

    async def _why_ended(self) -> None:
        """When the session ended under a call: wait (two seconds at most) until ``run`` knows
        why. The SDK may fail the call first (2.x does when an HTTP transport fails), before the
        transport's error has reached ``run``; then ``_lost`` cancels the wait."""
        if self.dead is None and self._ended is not None:
            with anyio.move_on_after(2.0):
                await self._ended.wait()

    def _gone(self, tool: str) -> McpServerError:
        what = self.dead or "closed the connection"
        tail = self._transport.stderr_tail(1) if self._transport is not None else []
        last = f"; its last stderr line: {tail[-1]}" if tail else ""
        return McpServerError(
            f"MCP server '{self.name}' {what} during tool '{tool}'{last}", server=self.name
        )

    def _timed_out(self, tool: str) -> McpServerError:
        return McpServerError(
            f"MCP server '{self.name}' did not answer tool '{tool}' within {self.timeout:g} s "
            "(McpToolProvider(timeout=...)); the call may still be running on the server",
            server=self.name,
        )


def _has_code(error: BaseException, code: int) -> bool:
    """Whether ``error``, or an error in it (exception groups, causes), is the SDK's protocol
    error with ``code``."""
    seen: set[int] = set()
    pending = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, _sdk.ProtocolError) and current.error.code == code:
            return True
        pending.extend(getattr(current, "exceptions", ()))
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                pending.append(linked)
    return False


def _leaf(error: BaseException) -> str:
    """The first real error inside (nested) exception groups, as ``Type: message``."""
    while getattr(error, "exceptions", None):  # an exception group (3.10: the backport's)
        error = error.exceptions[0]  # type: ignore[attr-defined]
    return f"{type(error).__name__}: {error}"
