"""A real MCP server written with the SDK's FastMCP, for the tests and the example.

python tests/mcp/_server.py                 # stdio
python tests/mcp/_server.py --http PORT     # streamable HTTP on 127.0.0.1:PORT
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.utilities.types import Image
from pydantic import BaseModel

server = FastMCP("weather", log_level="WARNING")


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
def radar() -> Image:
    """The rain radar, as an image."""
    return Image(data=base64.b64decode(base64.b64encode(b"\x89PNG fake radar")), format="png")


@server.tool()
def failing(city: str) -> str:
    """Always fails."""
    raise ValueError(f"no station in {city}")


@server.tool()
async def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    await asyncio.sleep(seconds)
    return "done"


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def crash() -> str:
    """Kills the server's process."""
    os._exit(3)


@server.tool()
async def unlock_alerts(ctx: Context) -> str:  # type: ignore[type-arg]
    """Adds the weather_alerts tool and tells the client."""

    def weather_alerts(region: str) -> str:
        """Weather alerts for a region."""
        return f"no alerts in {region}"

    server.add_tool(weather_alerts)
    await ctx.session.send_tool_list_changed()
    return "alerts unlocked"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.settings.port = int(sys.argv[2])
        server.run("streamable-http")
    else:
        server.run("stdio")
