"""McpToolProvider against real MCP servers written with the SDK (tests/mcp/_server.py): one
over stdio as a subprocess, one over streamable HTTP on a free loopback port."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="install the mcp extra: make test does")

from graph_agent import (
    AssistantMessage,
    ChatClient,
    FunctionChatModel,
    Prompt,
    ReactAgent,
    ScriptedChatModel,
    ToolCall,
    ToolExecutionException,
    ToolResponseMessage,
)
from graph_agent.mcp import HttpServer, McpServerError, McpToolProvider, StdioServer
from tests.redis_servers import free_port

SERVER = str(Path(__file__).with_name("_server.py"))
DECLARED = {
    "properties": {
        "city": {"title": "City", "type": "string"},
        "unit": {"default": "C", "title": "Unit", "type": "string"},
    },
    "required": ["city"],
    "title": "get_weatherArguments",
    "type": "object",
}


def stdio(**kw: Any) -> StdioServer:
    return StdioServer(sys.executable, [SERVER], **kw)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                process.wait()
                raise RuntimeError("the HTTP MCP server did not start") from None
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(10)


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> AssistantMessage:
    return AssistantMessage(
        "",
        tool_calls=tuple(
            ToolCall(id=f"call_{i}", name=name, arguments=json.dumps(args))
            for i, (name, args) in enumerate(calls)
        ),
    )


def answers(messages: Any) -> dict[str, str]:
    """The tool responses of a conversation, by call id."""
    return {
        r.id: r.response_data
        for m in messages
        if isinstance(m, ToolResponseMessage)
        for r in m.responses
    }


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_an_agent_calls_mcp_tools_and_the_model_gets_their_results(
    transport: str, asynchronous: bool, request: pytest.FixtureRequest
) -> None:
    server = stdio() if transport == "stdio" else HttpServer(request.getfixturevalue("http_url"))
    model = ScriptedChatModel([
        tool_calls(("get_weather", {"city": "Paris"}), ("forecast", {"city": "Oslo"}),
                   ("radar", {}), ("failing", {"city": "Rome"})),
        "Done.",
    ])  # fmt: skip

    def run(provider: McpToolProvider) -> Any:
        agent = ReactAgent.builder().name("w").model(model).tool_callback_providers(provider)
        return agent.build()

    if asynchronous:

        async def main() -> Any:
            async with McpToolProvider(server) as provider:
                return await run(provider).ainvoke("Weather?", {"thread_id": "t"})

        state = asyncio.run(main())
    else:
        with McpToolProvider(server) as provider:
            state = run(provider).invoke("Weather?", {"thread_id": "t"})
    got = answers(state["messages"])
    assert got["call_0"] == "sunny, 18°C in Paris"
    assert json.loads(got["call_1"]) == {"city": "Oslo", "celsius": 21.5}
    assert got["call_2"] == "[image: image/png, 15 bytes]"
    assert got["call_3"].startswith("tool 'failing' failed on MCP server 'weather': ")
    assert "no station in Rome" in got["call_3"]  # isError: the model sees the error text
    offered = model.prompts[0].options.tool_callbacks
    schemas = {t.tool_definition.name: t.tool_definition.schema for t in offered}
    assert schemas["get_weather"] == DECLARED  # passed through unchanged
    assert model.prompts[1].messages[-1].responses[0].response_data == got["call_0"]


def test_chat_client_uses_the_provider_and_sees_a_changed_list() -> None:
    def reply(prompt: Prompt) -> Any:
        names = sorted(t.tool_definition.name for t in prompt.options.tool_callbacks)
        if isinstance(prompt.messages[-1], ToolResponseMessage):
            return f"tools: {', '.join(names)}"
        return tool_calls(("unlock_alerts", {}))

    with McpToolProvider(stdio()) as provider:
        client = ChatClient.create(FunctionChatModel(reply))
        first = client.prompt("unlock").tools(provider).call()
        assert "weather_alerts" not in first.content()
        second = client.prompt("again").tools(provider).call()
    assert "weather_alerts" in second.content()


def test_a_list_change_reaches_the_agents_next_model_call() -> None:
    model = ScriptedChatModel([
        tool_calls(("unlock_alerts", {})),
        tool_calls(("weather_alerts", {"region": "Alps"})),
        "No alerts.",
    ])  # fmt: skip
    with McpToolProvider(stdio()) as provider:
        agent = ReactAgent.builder().name("w").model(model).tool_callback_providers(provider)
        state = agent.build().invoke("Alerts?", {"thread_id": "t"})
    names = [
        sorted(t.tool_definition.name for t in p.options.tool_callbacks) for p in model.prompts
    ]
    assert "weather_alerts" not in names[0] and "weather_alerts" in names[1]
    assert answers(state["messages"])["call_0"] == "no alerts in Alps"


def test_prefix_names_tools_by_server_and_a_clash_without_it_says_so(http_url: str) -> None:
    with McpToolProvider(stdio(name="local"), HttpServer(http_url), prefix=True) as provider:
        names = sorted(t.tool_definition.name for t in provider.get_tool_callbacks())
        assert "local__get_weather" in names and "weather__get_weather" in names
        tool = next(
            t
            for t in provider.get_tool_callbacks()
            if t.tool_definition.name == "local__get_weather"
        )
        assert tool.call('{"city": "Lima"}') == "sunny, 18°C in Lima"
    with pytest.raises(ValueError, match=r"both offer a tool named 'get_weather'.*prefix=True"):
        McpToolProvider(stdio(), HttpServer(http_url)).open()


def test_a_timeout_is_a_clear_error_naming_the_server() -> None:
    with McpToolProvider(stdio(), timeout=0.5) as provider:
        slow = next(t for t in provider.get_tool_callbacks() if t.tool_definition.name == "slow")
        started = time.monotonic()
        with pytest.raises(
            Exception, match=r"MCP server 'weather' did not answer tool 'slow' within 0.5 s"
        ):
            slow.call('{"seconds": 5}')
        assert time.monotonic() - started < 3
        fast = next(t for t in provider.get_tool_callbacks() if t.tool_definition.name == "slow")
        assert fast.call('{"seconds": 0}') == "done"  # the session still works


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_crashed_server_fails_its_calls_at_once_naming_it(asynchronous: bool) -> None:
    with McpToolProvider(stdio()) as provider:
        tools = {t.tool_definition.name: t for t in provider.get_tool_callbacks()}
        started = time.monotonic()
        for name, arguments in (("crash", "{}"), ("get_weather", '{"city": "Oslo"}')):
            with pytest.raises(Exception) as caught:
                if asynchronous:
                    asyncio.run(tools[name].acall(arguments))
                else:
                    tools[name].call(arguments)
            assert "MCP server 'weather'" in str(caught.value)
            assert isinstance(caught.value.__cause__, McpServerError)
        assert time.monotonic() - started < 5
    assert "did the server crash?" in str(caught.value)


def test_sessions_close_with_the_provider_and_a_closed_one_says_so() -> None:
    provider = McpToolProvider(stdio())
    with provider:
        tools = {t.tool_definition.name: t for t in provider.get_tool_callbacks()}
        pid = int(tools["pid"].call("{}"))
        os.kill(pid, 0)  # the server runs
    with pytest.raises(ProcessLookupError):  # its process ended with the provider
        os.kill(pid, 0)
    with pytest.raises(ToolExecutionException, match="is closed") as caught:
        tools["get_weather"].call('{"city": "Oslo"}')
    assert isinstance(caught.value.__cause__, McpServerError)
    with pytest.raises(RuntimeError, match="not open"):
        provider.get_tool_callbacks()
    with pytest.raises(RuntimeError, match="opened already"):
        provider.open()


def test_a_server_that_cannot_start_is_a_clear_error() -> None:
    with pytest.raises(
        McpServerError, match=r"could not start MCP server 'python-that-does-not-exist"
    ):
        McpToolProvider(StdioServer("python-that-does-not-exist")).open()
