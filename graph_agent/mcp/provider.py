"""``McpToolProvider``: the tools of MCP servers as ``ToolCallback``s.

The provider keeps its sessions on an event loop of its own, in a background thread (an anyio
blocking portal): the SDK's sessions live in anyio task groups, which must be left by the task
that entered them, so one loop owns them for their whole life. Sync callers (a sync agent,
its tool threads) wait on that loop; async callers await its futures without blocking their
own loop. So one provider serves sync and async agents, from any thread or loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import datetime
import json
import logging
import os
import re
import threading
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from ..errors import GraphAgentError, ToolArgumentsError, ToolExecutionException
from ..tools import ToolCallback, ToolContext, ToolDefinition, ToolMetadata, ToolProviderRequest
from ._results import result_text
from ._servers import HttpServer, StdioServer

__all__ = ["McpServerError", "McpTool", "McpToolProvider"]

_log = logging.getLogger("graph_agent.mcp")
_INVALID = re.compile(r"[^a-zA-Z0-9_-]")

Server = StdioServer | HttpServer


class McpServerError(GraphAgentError, ConnectionError):
    """An MCP server could not be reached, stopped answering, or crashed. ``server`` names it."""

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server


def _openai_name(name: str) -> str:
    """``name`` as OpenAI accepts a tool name (``^[a-zA-Z0-9_-]{1,64}$``)."""
    return _INVALID.sub("_", name)[:64] or "_"


class _Connection:
    """One server's session and tool list, owned by the provider's loop."""

    def __init__(self, server: Server, timeout: float) -> None:
        self.server = server
        self.timeout = timeout
        self.name = server.name or server.describe()
        self.session: Any = None
        self.tools: tuple[Any, ...] = ()  # the server's mcp.types.Tool list
        self.stale = False  # tools/list_changed came: re-list before the next use
        self.broken: str | None = None  # why the session is gone

    async def _on_message(self, message: Any) -> None:
        import mcp.types

        if isinstance(message, Exception):
            _log.debug("MCP server '%s' sent an error: %s", self.name, message)
            return
        root = getattr(message, "root", None)
        if isinstance(root, mcp.types.ToolListChangedNotification):
            self.stale = True

    async def refresh(self) -> None:
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            listed = await self.session.list_tools(cursor=cursor)
            tools.extend(listed.tools)
            cursor = listed.nextCursor
            if not cursor:
                break
        self.tools = tuple(tools)
        self.stale = False
        _log.debug("MCP server '%s' lists %d tools", self.name, len(tools))

    @contextlib.asynccontextmanager
    async def opened(self) -> AsyncIterator[_Connection]:
        from mcp import ClientSession

        with open(os.devnull, "w") if self.server.transport == "stdio" else _nothing() as errlog:
            async with (
                self.server.streams(errlog) as (read, write),
                ClientSession(
                    read,
                    write,
                    read_timeout_seconds=datetime.timedelta(seconds=self.timeout),
                    message_handler=self._on_message,
                ) as session,
            ):
                initialized = await session.initialize()
                if self.server.name is None:
                    self.name = initialized.serverInfo.name
                self.session = session
                await self.refresh()
                _log.info(
                    "MCP server '%s' connected over %s: %d tools",
                    self.name,
                    self.server.transport,
                    len(self.tools),
                )
                try:
                    yield self
                finally:
                    self.broken = "closed"

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        from mcp.shared.exceptions import McpError

        if self.broken is not None:
            raise McpServerError(
                f"MCP server '{self.name}' is {self.broken}; tool '{tool}' was not called",
                server=self.name,
            )
        try:
            result = await self.session.call_tool(tool, arguments)
        except McpError as error:
            message = str(error)
            if "Timed out" in message:
                raise McpServerError(
                    f"MCP server '{self.name}' did not answer tool '{tool}' within "
                    f"{self.timeout:g} s (McpToolProvider(timeout=...)); the call may still be "
                    "running there",
                    server=self.name,
                ) from error
            if "onnection closed" in message:
                self.broken = "gone (its connection closed: did the server crash?)"
                raise McpServerError(
                    f"MCP server '{self.name}' closed the connection during tool '{tool}' "
                    "(did the server crash?); its tools cannot be called until the provider is "
                    "opened again",
                    server=self.name,
                ) from error
            raise McpServerError(
                f"MCP server '{self.name}' failed tool '{tool}': {message}", server=self.name
            ) from error
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as error:
            self.broken = f"gone ({type(error).__name__}: its connection is closed)"
            raise McpServerError(
                f"MCP server '{self.name}' is {self.broken}; tool '{tool}' did not run",
                server=self.name,
            ) from error
        if self.stale:  # the call changed the server's tools: the model's next call sees them
            await self.refresh()
        return result


@contextlib.contextmanager
def _nothing() -> Any:
    yield None


class McpTool:
    """One tool of an MCP server, as a ``ToolCallback``: its schema goes to the model as the
    server declared it; a call sends the model's arguments to the server."""

    def __init__(self, provider: McpToolProvider, connection: _Connection, tool: Any, name: str):
        self._provider = provider
        self._connection = connection
        self.remote_name: str = tool.name
        self.server_name = connection.name
        self._definition = ToolDefinition(
            name=name,
            description=tool.description or tool.title or tool.name,
            input_schema=json.dumps(tool.inputSchema),
        )

    @property
    def tool_definition(self) -> ToolDefinition:
        return self._definition

    @property
    def tool_metadata(self) -> ToolMetadata:
        return ToolMetadata()

    def __repr__(self) -> str:
        return f"McpTool({self._definition.name!r}, server={self.server_name!r})"

    def _arguments(self, tool_input: str) -> dict[str, Any]:
        try:
            arguments = json.loads(tool_input or "{}")
        except json.JSONDecodeError as error:
            raise ToolArgumentsError(
                f"tool '{self._definition.name}': arguments are not valid JSON ({error})",
                tool_name=self._definition.name,
            ) from error
        if not isinstance(arguments, dict):
            raise ToolArgumentsError(
                f"tool '{self._definition.name}': arguments must be a JSON object",
                tool_name=self._definition.name,
            )
        return arguments

    def _answer(self, result: Any) -> str:
        text = result_text(result)
        if result.isError:
            raise ToolExecutionException(
                f"tool '{self._definition.name}' failed on MCP server '{self.server_name}': "
                f"{text or 'no details'}",
                tool_name=self._definition.name,
            )
        return text

    def _failed(self, error: McpServerError) -> ToolExecutionException:
        failure = ToolExecutionException(str(error), tool_name=self._definition.name)
        failure.__cause__ = error
        return failure

    def call(self, tool_input: str, tool_context: ToolContext | None = None) -> str:
        arguments = self._arguments(tool_input)
        try:
            result = self._provider._run(self._connection.call, self.remote_name, arguments)
        except McpServerError as error:
            raise self._failed(error) from error
        return self._answer(result)

    async def acall(self, tool_input: str, tool_context: ToolContext | None = None) -> str:
        arguments = self._arguments(tool_input)
        try:
            result = await self._provider._arun(self._connection.call, self.remote_name, arguments)
        except McpServerError as error:
            raise self._failed(error) from error
        return self._answer(result)


class McpToolProvider:
    """The tools of one or more MCP servers, for ``ReactAgent.builder().tool_callback_providers``
    and ``ChatClient`` (``.tools(provider)``).

    Open it with ``with`` (or ``open()``/``close()``) or ``async with`` (``aopen()``/
    ``aclose()``): every server's session opens once and closes with the provider. A call
    waits at most ``timeout`` seconds for the server. With ``prefix=True`` a tool is named
    ``<server>__<tool>`` (the server's ``name=``, else the name it gives itself), which two
    servers offering one tool name need. Names are made to fit OpenAI's rules (letters,
    digits, ``_`` and ``-``, 64 at most); the server is called with the tool's own name.

    When a server says its tools changed (``tools/list_changed``), the next model call of an
    agent sees the new list: the provider is also a ``ToolProvider``, asked per model call.
    """

    def __init__(self, *servers: Server, prefix: bool = False, timeout: float = 30.0) -> None:
        if not servers:
            raise ValueError("McpToolProvider needs at least one StdioServer or HttpServer")
        for server in servers:
            if not isinstance(server, (StdioServer, HttpServer)):
                raise TypeError(f"{server!r} is not a StdioServer or an HttpServer")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout!r}")
        self.servers = servers
        self.prefix = prefix
        self.timeout = timeout
        self._connections = [_Connection(server, timeout) for server in servers]
        self._portal_cm: Any = None
        self._portal: BlockingPortal | None = None
        self._entered: list[Any] = []
        self._tools: tuple[McpTool, ...] = ()
        self._listed: tuple[tuple[Any, ...], ...] = ()
        self._lock = threading.Lock()
        self._state = "new"

    def __repr__(self) -> str:
        return f"McpToolProvider({', '.join(map(repr, self.servers))}, state={self._state!r})"

    # -- opening and closing -------------------------------------------------------------------

    def open(self) -> McpToolProvider:
        """Start every server's session (raises ``McpServerError`` naming a server that
        cannot be reached; then nothing stays open)."""
        if self._state != "new":
            raise RuntimeError(f"{self!r} was opened already; make a new McpToolProvider")
        self._state = "opening"
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        try:
            for connection in self._connections:
                entering = self._portal.wrap_async_context_manager(connection.opened())
                try:
                    entering.__enter__()
                except Exception as error:
                    raise McpServerError(
                        f"could not start MCP server '{connection.name}' "
                        f"({connection.server.transport}): {type(error).__name__}: {error}",
                        server=connection.name,
                    ) from error
                self._entered.append(entering)
            self._rebuild()
        except BaseException:
            self.close()
            raise
        self._state = "open"
        return self

    def close(self) -> None:
        """Close every session (a stdio server's process ends) and the provider's loop."""
        if self._state == "closed":
            return
        self._state = "closed"
        while self._entered:
            with contextlib.suppress(Exception):
                self._entered.pop().__exit__(None, None, None)
        if self._portal_cm is not None:
            self._portal_cm.__exit__(None, None, None)
            self._portal_cm = self._portal = None

    async def aopen(self) -> McpToolProvider:
        """``open()`` without blocking the running loop."""
        await asyncio.to_thread(self.open)
        return self

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> McpToolProvider:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> McpToolProvider:
        return await self.aopen()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- tools ---------------------------------------------------------------------------------

    def _rebuild(self) -> None:
        """The tools, named, from the connections' current lists."""
        tools: dict[str, McpTool] = {}
        for connection in self._connections:
            for tool in connection.tools:
                name = f"{connection.name}__{tool.name}" if self.prefix else tool.name
                name = _openai_name(name)
                if name in tools:
                    other = tools[name].server_name
                    hint = (
                        "pass McpToolProvider(..., prefix=True) to name tools <server>__<tool>"
                        if not self.prefix
                        else "give the servers different name=..."
                    )
                    raise ValueError(
                        f"MCP servers '{other}' and '{connection.name}' both offer a tool "
                        f"named '{name}'; {hint}"
                    )
                tools[name] = McpTool(self, connection, tool, name)
        self._tools = tuple(tools.values())
        self._listed = tuple(c.tools for c in self._connections)

    def get_tool_callbacks(self) -> Sequence[ToolCallback]:
        """The servers' tools now (re-listed first when a server said they changed)."""
        if self._state != "open":
            raise RuntimeError(
                f"{self!r} is not open: use it inside 'with McpToolProvider(...) as tools:' "
                "(or 'async with', or call open())"
            )
        stale = [c for c in self._connections if c.stale and c.broken is None]
        for connection in stale:
            self._run(connection.refresh)
        with self._lock:
            if tuple(c.tools for c in self._connections) != self._listed:
                self._rebuild()
            return self._tools

    def __call__(self, request: ToolProviderRequest) -> Sequence[ToolCallback]:
        """As a ``ToolProvider``: the current tools, for each model call."""
        return self.get_tool_callbacks()

    # -- running on the provider's loop --------------------------------------------------------

    def _check_open(self) -> BlockingPortal:
        portal = self._portal
        if self._state != "open" or portal is None:
            raise McpServerError(f"{self!r} is closed; its tools cannot be called", server="?")
        return portal

    def _run(self, fn: Any, *args: Any) -> Any:
        return self._check_open().call(fn, *args)

    async def _arun(self, fn: Any, *args: Any) -> Any:
        future: concurrent.futures.Future[Any] = self._check_open().start_task_soon(fn, *args)
        return await asyncio.wrap_future(future)
