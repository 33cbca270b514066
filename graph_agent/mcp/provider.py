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
import json
import re
import threading
from collections.abc import Sequence
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal

from ..errors import McpServerError, ToolArgumentsError, ToolExecutionException
from ..tools import ToolCallback, ToolContext, ToolDefinition, ToolMetadata, ToolProviderRequest
from ._connection import Connection, Server
from ._results import result_text
from ._servers import HttpServer, StdioServer

__all__ = ["McpServerError", "McpTool", "McpToolProvider"]

_INVALID = re.compile(r"[^a-zA-Z0-9_-]")


def _openai_name(name: str) -> str:
    """``name`` as OpenAI accepts a tool name (``^[a-zA-Z0-9_-]{1,64}$``)."""
    return _INVALID.sub("_", name)[:64] or "_"


class McpTool:
    """One tool of an MCP server, as a ``ToolCallback``: it goes to the model with the
    description and input schema the server declared; a call sends the model's arguments to
    the server under the tool's own name (``remote_name``)."""

    def __init__(
        self, provider: McpToolProvider, connection: Connection, tool: dict[str, Any], name: str
    ):
        self._provider = provider
        self._connection = connection
        self.remote_name: str = tool["name"]
        self.server_name: str = connection.name
        self._definition = ToolDefinition(
            name=name,
            description=tool.get("description") or tool.get("title") or tool["name"],
            input_schema=json.dumps(tool["inputSchema"]),
        )

    @property
    def tool_definition(self) -> ToolDefinition:
        """Name (prefixed with ``prefix=True``), description and input schema."""
        return self._definition

    @property
    def tool_metadata(self) -> ToolMetadata:
        """Not ``return_direct``: the result goes back to the model."""
        return ToolMetadata()

    def __repr__(self) -> str:
        return f"McpTool({self._definition.name!r}, server={self.server_name!r})"

    def _arguments(self, tool_input: str) -> dict[str, Any]:
        name = self._definition.name
        try:
            arguments = json.loads(tool_input or "{}")
        except json.JSONDecodeError as error:
            raise ToolArgumentsError(
                f"tool '{name}': arguments are not valid JSON ({error})", tool_name=name
            ) from error
        if not isinstance(arguments, dict):
            raise ToolArgumentsError(
                f"tool '{name}': arguments must be a JSON object", tool_name=name
            )
        return arguments

    def _answer(self, result: dict[str, Any]) -> str:
        text = result_text(result)
        if result.get("isError"):
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
        """Call the tool on its server and wait (at most the provider's ``timeout``)."""
        arguments = self._arguments(tool_input)
        try:
            portal = self._provider._portal_for(self._connection, self.remote_name)
            result = portal.call(self._connection.call, self.remote_name, arguments)
        except McpServerError as error:
            raise self._failed(error) from error
        return self._answer(result)

    async def acall(self, tool_input: str, tool_context: ToolContext | None = None) -> str:
        """``call`` for async code: awaits the provider's loop, never blocks the caller's."""
        arguments = self._arguments(tool_input)
        try:
            portal = self._provider._portal_for(self._connection, self.remote_name)
            future = portal.start_task_soon(self._connection.call, self.remote_name, arguments)
            result = await asyncio.wrap_future(future)
        except McpServerError as error:
            raise self._failed(error) from error
        return self._answer(result)


class McpToolProvider:
    """The tools of one or more MCP servers, for ``ReactAgent.builder().tool_callback_providers``
    and ``ChatClient`` (``.tools(provider)``).

    Open it with ``with`` (or ``open()``/``close()``) or ``async with`` (``aopen()``/
    ``aclose()``): every server's session opens once (the servers start in parallel) and
    closes with the provider. A call waits at most ``timeout`` seconds for the server; a
    server gets ``start_timeout`` seconds to answer its handshake and each listing. With
    ``prefix=True`` a tool is named ``<server>__<tool>`` (the server's ``name=``, else the
    name it gives itself), which two servers offering one tool name need. Names are made to
    fit OpenAI's rules (letters, digits, ``_`` and ``-``, 64 at most); the server is called
    with the tool's own name.

    It is also a ``ToolProvider``: an agent asks it for its tools at every model call, so a
    server's ``tools/list_changed`` is seen by the next model call.
    """

    def __init__(
        self,
        *servers: Server,
        prefix: bool = False,
        timeout: float = 30.0,
        start_timeout: float = 30.0,
    ) -> None:
        if not servers:
            raise ValueError("McpToolProvider needs at least one StdioServer or HttpServer")
        for server in servers:
            if not isinstance(server, (StdioServer, HttpServer)):
                raise TypeError(f"{server!r} is not a StdioServer or an HttpServer")
        for name, value in (("timeout", timeout), ("start_timeout", start_timeout)):
            if not value > 0:
                raise ValueError(f"McpToolProvider({name}=...) must be positive, got {value!r}")
        self.servers: tuple[Server, ...] = servers
        self.prefix = prefix
        self.timeout = timeout
        self.start_timeout = start_timeout
        self._connections = [Connection(server, timeout, start_timeout) for server in servers]
        self._portal_cm: Any = None
        self._portal: BlockingPortal | None = None
        self._owners: list[concurrent.futures.Future[None]] = []
        self._tools: tuple[McpTool, ...] = ()
        self._listed: tuple[tuple[dict[str, Any], ...], ...] = ()
        self._lock = threading.Lock()
        self._state = "new"

    def __repr__(self) -> str:
        return f"McpToolProvider({', '.join(map(repr, self.servers))}, state={self._state!r})"

    # -- opening and closing -------------------------------------------------------------------

    def open(self) -> McpToolProvider:
        """Start every server's session and list its tools. Raises ``McpServerError`` naming a
        server that cannot be started or reached, and ``ValueError`` when two servers offer
        one tool name without ``prefix=True``; then nothing stays open."""
        with self._lock:
            if self._state != "new":
                raise RuntimeError(
                    f"{self!r} was opened already; a provider opens once: make a new "
                    "McpToolProvider to connect again"
                )
            self._state = "opening"
        try:
            self._portal_cm = start_blocking_portal(name="graph-agent-mcp")
            portal = self._portal = self._portal_cm.__enter__()
            self._owners = [portal.start_task_soon(c.run) for c in self._connections]
            for connection in self._connections:
                connection.ready.result()  # raises McpServerError
            with self._lock:
                self._rebuild()
        except BaseException:
            self.close()
            raise
        self._state = "open"
        return self

    def close(self) -> None:
        """Close every session (a stdio server's process ends) and the provider's loop. Calls
        still running fail with an error that says the provider was closed."""
        with self._lock:
            if self._state == "closed":
                return
            self._state = "closed"
        portal = self._portal
        if portal is not None:
            for connection in self._connections:
                with contextlib.suppress(RuntimeError):  # the portal is stopping already
                    portal.call(connection.stop)
            for owner in self._owners:
                with contextlib.suppress(BaseException):
                    owner.result()
        if self._portal_cm is not None:
            cm, self._portal_cm, self._portal = self._portal_cm, None, None
            cm.__exit__(None, None, None)

    async def aopen(self) -> McpToolProvider:
        """``open()`` without blocking the running loop."""
        await asyncio.to_thread(self.open)
        return self

    async def aclose(self) -> None:
        """``close()`` without blocking the running loop."""
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
        """The tools, named, from the connections' current lists (under ``_lock``). A tool
        whose name and definition did not change stays the same object."""
        known = {(t._connection, t.tool_definition): t for t in self._tools}
        listed = tuple(c.tools for c in self._connections)
        tools: dict[str, McpTool] = {}
        for connection, connection_tools in zip(self._connections, listed):
            for tool in connection_tools:
                name = f"{connection.name}__{tool['name']}" if self.prefix else tool["name"]
                name = _openai_name(name)
                if name in tools:
                    other = tools[name].server_name
                    hint = (
                        "pass McpToolProvider(..., prefix=True) to name tools <server>__<tool>"
                        if not self.prefix
                        else "give the servers different names with name=..."
                    )
                    raise ValueError(
                        f"MCP servers '{other}' and '{connection.name}' both offer a tool "
                        f"named '{name}'; {hint}"
                    )
                made = McpTool(self, connection, tool, name)
                tools[name] = known.get((connection, made.tool_definition), made)
        self._tools = tuple(tools.values())
        self._listed = listed

    def get_tool_callbacks(self) -> Sequence[ToolCallback]:
        """The servers' tools as last listed (a server's ``tools/list_changed`` makes the
        provider list them again in the background; a tool call that changed them returns
        after the new list is in). Never waits on a server."""
        if self._state != "open":
            raise RuntimeError(
                f"{self!r} is not open: use it inside 'with McpToolProvider(...) as tools:' "
                "(or 'async with', or call open())"
            )
        with self._lock:
            if tuple(c.tools for c in self._connections) != self._listed:
                self._rebuild()
            return self._tools

    def __call__(self, request: ToolProviderRequest) -> Sequence[ToolCallback]:
        """As a ``ToolProvider``: the current tools, for each model call."""
        return self.get_tool_callbacks()

    def _portal_for(self, connection: Connection, tool: str) -> BlockingPortal:
        """The loop to call ``tool`` on, or ``McpServerError`` when the provider is not open."""
        portal = self._portal
        if self._state != "open" or portal is None:
            state = "was closed" if self._state == "closed" else "is not open yet"
            raise McpServerError(
                f"MCP server '{connection.name}': its McpToolProvider {state}; tool '{tool}' "
                "was not called",
                server=connection.name,
            )
        return portal
