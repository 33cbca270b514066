"""Tools from MCP servers (extra ``mcp``: the official ``mcp`` SDK, 2.x, or 1.x from 1.22).

``McpToolProvider`` connects to stdio and streamable-HTTP MCP servers and offers their tools to
agents and chat clients::

    from graph_agent.mcp import McpToolProvider, StdioServer

    with McpToolProvider(StdioServer("python", ["weather_server.py"])) as mcp_tools:
        agent = ReactAgent.builder().name("a").model(model).tool_callback_providers(mcp_tools).build()
        agent.call("Weather in Paris?")
"""

from __future__ import annotations

try:
    import mcp.shared.exceptions
    import mcp.types  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised in a subprocess (tests/test_extras.py)
    if isinstance(error, ModuleNotFoundError) and error.name == "mcp":
        raise ImportError(
            "graph_agent.mcp needs the MCP SDK, which is not installed: "
            "pip install 'graph-agent[mcp]'"
        ) from error
    raise ImportError(
        f"graph_agent.mcp needs the MCP SDK, which is installed but does not import ({error}); "
        "pip install --upgrade 'graph-agent[mcp]' installs one that works with the packages "
        "beside it (2.x, or 1.x from 1.22)"
    ) from error

from ._servers import HttpServer, StdioServer
from .provider import McpServerError, McpTool, McpToolProvider

__all__ = ["HttpServer", "McpServerError", "McpTool", "McpToolProvider", "StdioServer"]
