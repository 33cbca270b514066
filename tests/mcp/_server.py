"""A real MCP server written with the SDK's MCPServer (FastMCP in 1.x), for the tests.

python tests/mcp/_server.py                 # stdio
python tests/mcp/_server.py --http PORT     # streamable HTTP on 127.0.0.1:PORT

It lists its tools in pages of ``PAGE`` (through the SDK's low-level list handler), so every
listing is paginated. ``WEATHER_FAIL_AT_START=1`` in its environment makes it exit with
code 2 before speaking MCP, after a line on stderr; ``WEATHER_START_DELAY=<seconds>`` makes it
wait that long before it answers anything.

It runs on either major of the SDK, as graph_agent.mcp does: 2.x (``make test``) and 1.x
(``make test-mcp1``); what differs between them is under ``SDK_MAJOR``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import warnings
from typing import Any

from pydantic import BaseModel

# Its stderr is for its own last words, which the tests read: not for the warning an older 1.x
# SDK beside a newer pydantic-settings gives when imported.
warnings.filterwarnings("ignore", module=r"pydantic_settings\.")

try:
    from mcp import types
    from mcp.server.mcpserver import Context, Image, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    SDK_MAJOR = 2
except ImportError:
    from mcp.server.fastmcp import Context, Image
    from mcp.server.fastmcp import FastMCP as MCPServer
    from mcp.server.fastmcp.exceptions import ToolError

    SDK_MAJOR = 1

PAGE = 4
server = MCPServer("weather", log_level="WARNING")


class Forecast(BaseModel):
    city: str
    celsius: float


@server.tool()
def get_weather(city: str, unit: str = "C") -> str:
    """Current weather for a city."""
    return f"sunny, 18°{unit} in {city}"


@server.tool()
def forecast(city: str) -> Forecast:
    """Tomorrow's forecast for a city, as structured data."""
    return Forecast(city=city, celsius=21.5)


@server.tool()
def station(city: str) -> types.CallToolResult:
    """A weather station's reading: structured content only, no text."""
    return types.CallToolResult(content=[], structuredContent={"city": city, "hpa": 1013})


@server.tool()
def radar() -> Image:
    """The rain radar, as an image."""
    return Image(data=b"\x89PNG fake radar", format="png")


@server.tool()
def attachments() -> types.CallToolResult:
    """Audio, an embedded text resource, an embedded binary resource and a resource link."""
    return types.CallToolResult(
        content=[
            types.AudioContent(type="audio", data="AAAA", mimeType="audio/wav"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="file:///notes.txt", text="bring an umbrella"
                ),
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(
                    uri="file:///map.bin", blob="AAAAAA==", mimeType="application/pdf"
                ),
            ),
            types.ResourceLink(type="resource_link", uri="file:///full.csv", name="full"),
        ]
    )


@server.tool()
def failing(city: str) -> str:
    """Always fails (a ToolError: the server answers isError with its text; 2.x keeps the text
    of any other exception to itself)."""
    raise ToolError(f"no station in {city}")


@server.tool()
def refuse() -> types.CallToolResult:
    """Answers isError with a text of its own."""
    return types.CallToolResult(
        isError=True, content=[types.TextContent(type="text", text="quota exceeded")]
    )


@server.tool()
async def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    started = os.environ.get("WEATHER_SLOW_STARTED")
    if started:  # a test waits for this file, not for a time, to know the call is in flight
        with open(started, "a") as mark:
            mark.write("started\n")
    await asyncio.sleep(seconds)
    return "done"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def crash() -> str:
    """Writes a last word on stderr and kills the server's process (exit code 3)."""
    print("fatal: the barometer broke", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
async def unlock_alerts(ctx: Context) -> str:  # type: ignore[type-arg]
    """Adds the weather_alerts tool and tells the client its tools changed."""

    def weather_alerts(region: str) -> str:
        """Weather alerts for a region."""
        return f"no alerts in {region}"

    server.add_tool(weather_alerts)
    await ctx.session.send_tool_list_changed()
    return "alerts unlocked"


async def _page(cursor: str | None) -> types.ListToolsResult:
    tools = await server.list_tools()
    start = int(cursor) if cursor else 0
    more = start + PAGE < len(tools)
    return types.ListToolsResult(
        tools=tools[start : start + PAGE], nextCursor=str(start + PAGE) if more else None
    )


if SDK_MAJOR == 2:

    async def _list_in_pages(ctx: Any, params: types.PaginatedRequestParams) -> Any:
        return await _page(params.cursor)

    server._lowlevel_server.add_request_handler(
        "tools/list", types.PaginatedRequestParams, _list_in_pages
    )
else:

    async def _list_in_pages_v1(request: types.ListToolsRequest) -> Any:
        return await _page(request.params.cursor if request.params else None)

    server._mcp_server.list_tools()(_list_in_pages_v1)


if __name__ == "__main__":
    if os.environ.get("WEATHER_FAIL_AT_START") == "1":
        print("cannot read /etc/weather.toml", file=sys.stderr, flush=True)
        sys.exit(2)
    time.sleep(float(os.environ.get("WEATHER_START_DELAY", "0")))
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        if SDK_MAJOR == 2:
            server.run("streamable-http", port=int(sys.argv[2]))
        else:
            server.settings.port = int(sys.argv[2])
            server.run("streamable-http")
    else:
        server.run("stdio")
