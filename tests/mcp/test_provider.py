"""McpToolProvider in agents and chat clients, against real MCP servers written with the SDK
(tests/mcp/_server.py): over stdio as a subprocess, and over streamable HTTP on a loopback
port."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from graph_agent import (
    ChatClient,
    FunctionChatModel,
    Prompt,
    ReactAgent,
    ScriptedChatModel,
    ToolExecutionException,
    ToolResponseMessage,
)
from graph_agent.mcp import HttpServer, McpServerError, McpToolProvider, StdioServer
from tests.mcp import _server
from tests.mcp._support import (
    answers,
    slow_started,
    stdio,
    tool_calls,
    tools_of,
    wait_for_lines,
    wire,
)


def declared_tools() -> dict[str, Any]:
    """What the test server declares, asked in-process (the SDK server's own list), as JSON."""
    return {t.name: wire(t) for t in asyncio.run(_server.server.list_tools())}


def agent_with(model: Any, provider: McpToolProvider, **options: Any) -> Any:
    builder = ReactAgent.builder().name("w").model(model).tool_callback_providers(provider)
    if options.get("parallel"):
        builder = builder.parallel_tool_execution(True)
    return builder.build()


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_an_agent_calls_mcp_tools_and_the_model_gets_their_results(
    transport: str, asynchronous: bool, request: pytest.FixtureRequest
) -> None:
    server = stdio() if transport == "stdio" else HttpServer(request.getfixturevalue("http_url"))
    model = ScriptedChatModel([
        tool_calls(("get_weather", {"city": "Paris", "unit": "F"}), ("forecast", {"city": "Oslo"}),
                   ("station", {"city": "Bern"}), ("radar", {}), ("attachments", {}),
                   ("failing", {"city": "Rome"}), ("refuse", {})),
        "Done.",
    ])  # fmt: skip

    if asynchronous:

        async def main() -> Any:
            async with McpToolProvider(server) as provider:
                return await agent_with(model, provider).ainvoke("Weather?", {"thread_id": "t"})

        state = asyncio.run(main())
    else:
        with McpToolProvider(server) as provider:
            state = agent_with(model, provider).invoke("Weather?", {"thread_id": "t"})
    got = answers(state["messages"])
    assert got["call_0"] == "sunny, 18°F in Paris"  # the model's arguments reached the tool
    assert json.loads(got["call_1"]) == {"city": "Oslo", "celsius": 21.5}
    assert json.loads(got["call_2"]) == {"city": "Bern", "hpa": 1013}  # structuredContent only
    assert got["call_3"] == "[image: image/png, 15 bytes]"
    assert got["call_4"].splitlines() == [
        "[audio: audio/wav, 3 bytes]",
        "bring an umbrella",
        "[resource file:///map.bin: application/pdf, 4 bytes]",
        "[resource link file:///full.csv: full]",
    ]
    # isError: the model sees the server's error text, naming the tool and the server
    assert got["call_5"].startswith("tool 'failing' failed on MCP server 'weather': ")
    assert "no station in Rome" in got["call_5"]
    assert got["call_6"] == "tool 'refuse' failed on MCP server 'weather': quota exceeded"
    assert model.prompts[1].messages[-1].responses[0].response_data == got["call_0"]


def test_the_model_is_offered_every_tool_with_the_schema_the_server_declared() -> None:
    declared = declared_tools()
    assert len(declared) > _server.PAGE  # the server lists them in several pages
    model = ScriptedChatModel(["Hi."])
    with McpToolProvider(stdio()) as provider:
        agent_with(model, provider).invoke("Hi", {"thread_id": "t"})
    offered = {
        t.tool_definition.name: t.tool_definition for t in model.prompts[0].options.tool_callbacks
    }
    assert list(offered) == list(declared)
    for name, tool in declared.items():
        assert offered[name].schema == tool["inputSchema"]
        assert offered[name].description == tool["description"]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_list_change_reaches_the_agents_next_model_call(asynchronous: bool) -> None:
    model = ScriptedChatModel([
        tool_calls(("unlock_alerts", {})),
        tool_calls(("weather_alerts", {"region": "Alps"})),
        "No alerts.",
    ])  # fmt: skip

    async def arun(provider: McpToolProvider) -> Any:
        return await agent_with(model, provider).ainvoke("Alerts?", {"thread_id": "t"})

    with McpToolProvider(stdio()) as provider:
        if asynchronous:
            state = asyncio.run(arun(provider))
        else:
            state = agent_with(model, provider).invoke("Alerts?", {"thread_id": "t"})
    names = [
        sorted(t.tool_definition.name for t in p.options.tool_callbacks) for p in model.prompts
    ]
    assert "weather_alerts" not in names[0] and "weather_alerts" in names[1]
    assert answers(state["messages"])["call_0"] == "no alerts in Alps"


def test_a_chat_client_sees_a_changed_list_at_its_next_call() -> None:
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


RENDEZVOUS_SERVER = str(Path(__file__).with_name("_rendezvous_server.py"))


def test_parallel_tool_calls_of_a_sync_agent_share_the_session() -> None:
    """The four calls are in flight on the one session at once: each waits at the server
    until all four are there (tests/mcp/_rendezvous_server.py), which calls made one after
    the other never are (then the first gives up after 10 s and the answers say so). No
    speed is asserted: a slow machine only makes them meet later."""
    meet = ("rendezvous", {"parties": 4, "timeout": 10})
    model = ScriptedChatModel([tool_calls(*[meet] * 4), "Done."])
    with McpToolProvider(StdioServer(sys.executable, [RENDEZVOUS_SERVER])) as provider:
        state = agent_with(model, provider, parallel=True).invoke("Go", {"thread_id": "t"})
    assert list(answers(state["messages"]).values()) == ["together"] * 4


def test_an_async_call_leaves_the_callers_loop_free() -> None:
    async def main() -> tuple[str, int]:
        async with McpToolProvider(stdio()) as provider:
            ticks = 0
            call = asyncio.ensure_future(tools_of(provider)["slow"].acall('{"seconds": 0.5}'))
            while not call.done():
                ticks += 1
                await asyncio.sleep(0.01)
            return await call, ticks

    result, ticks = asyncio.run(main())
    assert result == "done"
    assert ticks > 20  # the loop kept running while the server worked


def test_prefix_names_tools_by_server_and_calls_them_by_their_own_name(http_url: str) -> None:
    servers = (stdio(name="local box.v2"), HttpServer(http_url))
    with McpToolProvider(*servers, prefix=True) as provider:
        tools = tools_of(provider)
        assert "local_box_v2__get_weather" in tools  # fits ^[a-zA-Z0-9_-]{1,64}$
        assert "weather__get_weather" in tools  # the HTTP server's own name
        assert tools["local_box_v2__get_weather"].call('{"city": "Lima"}') == "sunny, 18°C in Lima"
        assert json.loads(tools["weather__forecast"].call('{"city": "Kyiv"}'))["city"] == "Kyiv"


def test_two_servers_with_one_tool_name_need_prefix(http_url: str) -> None:
    with pytest.raises(ValueError) as caught:
        McpToolProvider(stdio(name="local"), HttpServer(http_url)).open()
    message = str(caught.value)
    assert "'local' and 'weather' both offer a tool named 'get_weather'" in message
    assert "prefix=True" in message


def test_sessions_close_with_the_provider_and_a_closed_one_says_so() -> None:
    provider = McpToolProvider(stdio())
    with provider:
        tools = tools_of(provider)
        pid = int(tools["pid"].call("{}"))
        os.kill(pid, 0)  # the server runs
    with pytest.raises(ProcessLookupError):  # its process ended with the provider
        os.kill(pid, 0)
    with pytest.raises(ToolExecutionException) as caught:
        tools["get_weather"].call('{"city": "Oslo"}')
    assert str(caught.value) == (
        "MCP server 'weather': its McpToolProvider was closed; tool 'get_weather' was not called"
    )
    assert isinstance(caught.value.__cause__, McpServerError)
    with pytest.raises(RuntimeError, match="is not open"):
        provider.get_tool_callbacks()
    with pytest.raises(RuntimeError, match="opened already"):
        provider.open()


def test_closing_fails_a_running_call_at_once(tmp_path: Path) -> None:
    failures: list[BaseException] = []
    marks = tmp_path / "slow-started"
    provider = McpToolProvider(slow_started(marks)).open()
    slow = tools_of(provider)["slow"]

    def call() -> None:
        try:
            slow.call('{"seconds": 20}')
        except BaseException as error:
            failures.append(error)

    worker = threading.Thread(target=call)
    worker.start()
    wait_for_lines(marks)  # the call runs at the server
    started = time.monotonic()
    provider.close()
    worker.join(5)
    assert time.monotonic() - started < 4
    assert not worker.is_alive()
    assert str(failures[0]) == (
        "MCP server 'weather' was closed (its McpToolProvider was closed) during tool 'slow'"
    )


def test_async_with_opens_and_closes_without_blocking_the_loop() -> None:
    async def main() -> int:
        async with McpToolProvider(stdio()) as tools:
            pid_tool = tools_of(tools)["pid"]
            pid = int(await pid_tool.acall("{}"))
        with pytest.raises(ToolExecutionException, match="its McpToolProvider was closed"):
            await pid_tool.acall("{}")
        return pid

    pid = asyncio.run(main())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_connecting_is_logged_and_secrets_are_not(
    http_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="graph_agent.mcp")
    servers = (
        HttpServer(http_url, headers={"Authorization": "Bearer s3cret-token"}, name="remote"),
        StdioServer(stdio().command, stdio().args, env={"WEATHER_KEY": "s3cret-key"}),
    )
    with McpToolProvider(*servers, prefix=True) as provider:
        assert "s3cret" not in repr(provider)
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    count = len(declared_tools())
    assert infos == [
        f"MCP server 'remote' connected over streamable HTTP: {count} tools",
        f"MCP server 'weather' connected over stdio: {count} tools",
    ] or infos == [
        f"MCP server 'weather' connected over stdio: {count} tools",
        f"MCP server 'remote' connected over streamable HTTP: {count} tools",
    ]
    assert "s3cret" not in caplog.text
