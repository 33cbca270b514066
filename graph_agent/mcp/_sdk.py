"""The one place that knows which major of the official MCP SDK is installed: 2.x (the current
one) or 1.x (1.22 and later). What differs between them, for what graph_agent.mcp uses:

- the protocol error is ``MCPError`` (2.x) or ``McpError`` (1.x), and a request that timed out
  has the code ``REQUEST_TIMEOUT`` (-32001) in 2.x, the HTTP status 408 in 1.x;
- timeouts are float seconds (2.x) or ``timedelta`` (1.x);
- the streamable-HTTP client takes an ``httpx2`` client (2.x) or an ``httpx`` one (1.24+), or
  makes its own (``streamablehttp_client``, 1.22 and 1.23), and yields two streams (2.x) or
  three (1.x).

The models' Python field names differ too (``inputSchema`` in 1.x, ``input_schema`` in 2.x):
graph_agent.mcp reads tools and results in their wire form instead (``wire()``), which is the
same JSON in both.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import mcp.shared.exceptions
import mcp.types

__all__ = ["MAJOR", "REQUEST_TIMEOUT", "ProtocolError", "http_streams", "seconds", "wire"]

MAJOR: int = 2 if hasattr(mcp.shared.exceptions, "MCPError") else 1
"""The installed SDK's major version."""

# The error an MCP request raises when the server answers with an error, the request times out
# or the connection closes: ``MCPError`` (2.x) or ``McpError`` (1.x), with the same ``error.code``.
if TYPE_CHECKING:  # mypy reads the 2.x SDK
    from mcp.shared.exceptions import MCPError as ProtocolError
else:
    _errors = mcp.shared.exceptions
    ProtocolError = _errors.MCPError if MAJOR >= 2 else _errors.McpError

REQUEST_TIMEOUT: int = mcp.types.REQUEST_TIMEOUT if MAJOR >= 2 else 408
"""The code of the ``ProtocolError`` of a request that timed out."""


def seconds(value: float) -> Any:
    """A timeout as the SDK takes it."""
    return value if MAJOR >= 2 else datetime.timedelta(seconds=value)


def wire(model: Any) -> dict[str, Any]:
    """A protocol model (a tool, a tool result, ...) as its JSON on the wire: the same keys
    (``inputSchema``, ``mimeType``, ``isError``, ...) with either major."""
    dumped: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


@contextlib.asynccontextmanager
async def http_streams(
    url: str, headers: Mapping[str, str] | None
) -> AsyncIterator[tuple[Any, Any]]:
    """The read and write streams of a streamable-HTTP connection to ``url``; on leaving, the
    session ends (an HTTP DELETE) and the HTTP client closes."""
    sent = dict(headers) if headers is not None else None
    try:
        from mcp.client.streamable_http import streamable_http_client
    except ImportError:  # 1.22 and 1.23: the SDK makes the HTTP client
        from mcp.client.streamable_http import streamablehttp_client  # type: ignore[attr-defined]

        async with streamablehttp_client(url, headers=sent) as (read, write, _):
            yield read, write
        return
    if MAJOR >= 2:
        import httpx2 as http
    else:
        import httpx as http  # type: ignore[no-redef]
    # read: how long an SSE stream may stay silent; each call has its own timeout on top.
    # (2.x follows a redirect itself, within the server's origin, whatever follow_redirects.)
    timeout = http.Timeout(30.0, read=300.0)
    async with (
        http.AsyncClient(headers=sent, timeout=timeout, follow_redirects=True) as client,
        streamable_http_client(url, http_client=client) as streams,
    ):
        yield streams[0], streams[1]
