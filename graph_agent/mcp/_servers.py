"""Where an MCP server is: a command to start (stdio) or a URL (streamable HTTP)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

__all__ = ["HttpServer", "StdioServer"]


@dataclasses.dataclass(frozen=True)
class StdioServer:
    """A server started as a subprocess that speaks MCP on its stdin/stdout. ``env`` is added
    to this process's environment; ``name`` (default: the server's own name) prefixes its
    tools with ``prefix=True`` and names it in errors."""

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    name: str | None = None

    def __repr__(self) -> str:  # env values may hold secrets: never shown
        return f"StdioServer({self.command!r}, {list(self.args)!r})"

    @property
    def transport(self) -> str:
        return "stdio"

    def describe(self) -> str:
        return " ".join([self.command, *self.args])

    @contextlib.asynccontextmanager
    async def streams(self, errlog: Any) -> AsyncIterator[tuple[Any, Any]]:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        env = {**os.environ, **self.env} if self.env is not None else None
        parameters = StdioServerParameters(
            command=self.command, args=list(self.args), env=env, cwd=self.cwd
        )
        async with stdio_client(parameters, errlog=errlog) as (read, write):
            yield read, write


@dataclasses.dataclass(frozen=True)
class HttpServer:
    """A server at ``url`` speaking MCP's streamable HTTP transport. ``headers`` (an
    ``Authorization`` token, say) go with every request and are never logged or shown."""

    url: str
    headers: Mapping[str, str] | None = None
    name: str | None = None

    def __repr__(self) -> str:
        return f"HttpServer({self.url!r})"

    @property
    def transport(self) -> str:
        return "streamable HTTP"

    def describe(self) -> str:
        return self.url

    @contextlib.asynccontextmanager
    async def streams(self, errlog: Any) -> AsyncIterator[tuple[Any, Any]]:
        headers = dict(self.headers) if self.headers is not None else None
        try:  # the SDK's newer client (1.2x) takes an httpx client
            from mcp.client.streamable_http import streamable_http_client
        except ImportError:  # older 1.x
            from mcp.client.streamable_http import streamablehttp_client

            async with streamablehttp_client(self.url, headers=headers) as (read, write, _):
                yield read, write
            return
        import httpx

        timeout = httpx.Timeout(30.0, read=300.0)
        async with (
            httpx.AsyncClient(headers=headers, timeout=timeout, follow_redirects=True) as http,
            streamable_http_client(self.url, http_client=http) as (read, write, _),
        ):
            yield read, write
