"""Tools from an MCP server: an agent calls the tools of a server it starts over stdio.

``McpToolProvider`` starts this same file with ``--serve``: a real MCP server written with
the official SDK's ``MCPServer`` (``serve()`` below; ``FastMCP`` in SDK 1.x). It lists the
server's tools and offers them to the agent like any other tools; the model's calls go to the
server. Needs the ``mcp`` extra: ``pip install 'graph-agent[mcp]'``.

    python examples/mcp_tools.py [--live]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from _models import choose, needs, parse_args

from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall

with needs("the MCP SDK", "pip install 'graph-agent[mcp]'"):
    from graph_agent.mcp import McpToolProvider, StdioServer

SERVER = Path(__file__).resolve()


def serve() -> None:
    """The MCP server: two weather tools, over stdin/stdout."""
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:  # the SDK's 1.x
        from mcp.server.fastmcp import FastMCP as MCPServer

    server = MCPServer("weather", log_level="WARNING")

    @server.tool()
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"sunny, 18°C in {city}"

    @server.tool()
    def get_alerts(region: str) -> str:
        """Weather alerts for a region."""
        return f"no alerts in {region}"

    server.run("stdio")


def offline_model() -> ScriptedChatModel:
    call = ToolCall(id="call_1", name="get_weather", arguments=json.dumps({"city": "Paris"}))
    return ScriptedChatModel([
        AssistantMessage("", tool_calls=(call,)),
        "It is sunny and 18°C in Paris.",
    ])  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv)
    with McpToolProvider(StdioServer(sys.executable, [str(SERVER), "--serve"])) as mcp_tools:
        for tool in mcp_tools.get_tool_callbacks():
            definition = tool.tool_definition
            print(f"tool {definition.name}: {definition.description} {definition.input_schema}")
        agent = (
            ReactAgent.builder()
            .name("weather_agent")
            .model(choose(args, offline_model()))
            .tool_callback_providers(mcp_tools)
            .build()
        )
        state = agent.invoke("What's the weather in Paris?", {"thread_id": "mcp-demo"})
    for message in state["messages"]:
        for call in getattr(message, "tool_calls", ()):
            print(f"model calls {call.name}({call.arguments})")
        for response in getattr(message, "responses", ()):
            print(f"server answers: {response.response_data}")
    print(f"assistant: {state['messages'][-1].text}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        main()
