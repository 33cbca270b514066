"""When an MCP server fails: it does not start, it is slow, it crashes, its HTTP endpoint goes
away. Each is a prompt, clear error naming the server, never a hang."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from graph_agent import ReactAgent, ScriptedChatModel, ToolExecutionException
from graph_agent.mcp import HttpServer, McpServerError, McpToolProvider, StdioServer
from tests.mcp._support import (
    answers,
    http_server,
    session_ends,
    slow_started,
    stdio,
    tool_calls,
    tools_of,
    wait_for_lines,
)


def failure_of(tool: Any, arguments: str, *, asynchronous: bool = False) -> ToolExecutionException:
    with pytest.raises(ToolExecutionException) as caught:
        if asynchronous:
            asyncio.run(tool.acall(arguments))
        else:
            tool.call(arguments)
    assert isinstance(caught.value.__cause__, McpServerError)
    return caught.value


def test_a_slow_call_times_out_naming_the_server_the_tool_and_the_timeout() -> None:
    model = ScriptedChatModel([tool_calls(("slow", {"seconds": 10})), "Too slow."])
    with McpToolProvider(stdio(), timeout=0.5) as provider:
        agent = ReactAgent.builder().name("w").model(model).tool_callback_providers(provider)
        started = time.monotonic()
        state = agent.build().invoke("Go", {"thread_id": "t"})
        assert time.monotonic() - started < 3
        assert answers(state["messages"])["call_0"] == (
            "MCP server 'weather' did not answer tool 'slow' within 0.5 s "
            "(McpToolProvider(timeout=...)); the call may still be running on the server"
        )  # what the model sees
        assert tools_of(provider)["slow"].call('{"seconds": 0}') == "done"  # still usable


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_crash_fails_the_call_and_later_ones_at_once_saying_how_it_ended(
    asynchronous: bool,
) -> None:
    with McpToolProvider(stdio()) as provider:
        tools = tools_of(provider)
        started = time.monotonic()
        crashed = failure_of(tools["crash"], "{}", asynchronous=asynchronous)
        assert str(crashed) == (
            "MCP server 'weather' exited with code 3 during tool 'crash'; its last stderr line: "
            "fatal: the barometer broke"
        )
        later = failure_of(tools["get_weather"], '{"city": "Oslo"}', asynchronous=asynchronous)
        assert str(later) == (
            "MCP server 'weather' exited with code 3; tool 'get_weather' was not called"
        )
        assert time.monotonic() - started < 3
        assert len(tools_of(provider)) == len(tools)  # the list stays, its calls fail


def test_a_crash_fails_calls_that_were_waiting_on_the_server(tmp_path: Path) -> None:
    marks = tmp_path / "slow-started"

    async def main() -> list[BaseException | str]:
        async with McpToolProvider(slow_started(marks)) as provider:
            tools = tools_of(provider)
            slow = asyncio.ensure_future(tools["slow"].acall('{"seconds": 20}'))
            await asyncio.to_thread(wait_for_lines, marks)  # the call runs at the server
            crash = tools["crash"].acall("{}")
            return await asyncio.gather(slow, crash, return_exceptions=True)

    started = time.monotonic()
    slow, crash = asyncio.run(main())
    assert time.monotonic() - started < 5
    assert isinstance(slow, ToolExecutionException) and isinstance(crash, ToolExecutionException)
    assert str(slow).startswith("MCP server 'weather' exited with code 3 during tool 'slow'")


def test_a_server_killed_between_calls_is_reported_at_the_next_call() -> None:
    with McpToolProvider(stdio(), timeout=20) as provider:
        tools = tools_of(provider)
        with session_ends() as ended:
            os.kill(int(tools["pid"].call("{}")), signal.SIGKILL)
            assert ended.wait(10)  # the provider has found it gone
        started = time.monotonic()
        failure = failure_of(tools["get_weather"], '{"city": "Oslo"}')
        assert time.monotonic() - started < 1
    assert str(failure) == (
        "MCP server 'weather' was killed by SIGKILL; tool 'get_weather' was not called"
    )


def test_an_http_server_that_goes_away_fails_the_next_call_promptly() -> None:
    with http_server() as (url, process), McpToolProvider(HttpServer(url), timeout=20) as tools:
        get_weather = tools_of(tools)["get_weather"]
        assert get_weather.call('{"city": "Oslo"}') == "sunny, 18°C in Oslo"
        process.kill()
        process.wait()
        started = time.monotonic()
        failure = failure_of(get_weather, '{"city": "Oslo"}')
        assert time.monotonic() - started < 5  # not the 20 s timeout
        assert str(failure).startswith("MCP server 'weather' lost its connection (")
        assert "during tool 'get_weather'" in str(failure)
        again = failure_of(get_weather, '{"city": "Oslo"}')
        assert "tool 'get_weather' was not called" in str(again)


def test_a_server_that_exits_at_start_is_an_error_with_its_exit_code_and_stderr() -> None:
    server = stdio(env={"WEATHER_FAIL_AT_START": "1"}, name="weather")
    started = time.monotonic()
    with pytest.raises(McpServerError) as caught:
        McpToolProvider(server).open()
    assert time.monotonic() - started < 5
    assert str(caught.value) == (
        f"could not start MCP server 'weather' (stdio: {sys.executable} {stdio().args[0]}): "
        "exited with code 2\n  stderr: cannot read /etc/weather.toml"
    )
    assert caught.value.server == "weather"


def test_a_server_that_never_answers_its_handshake_fails_after_start_timeout() -> None:
    silent = StdioServer(sys.executable, ["-c", "import time; time.sleep(30)"], name="silent")
    started = time.monotonic()
    with pytest.raises(McpServerError) as caught:
        McpToolProvider(silent, timeout=60, start_timeout=0.5).open()
    assert time.monotonic() - started < 10  # the start timeout, not the call timeout
    assert str(caught.value).startswith(
        f"could not start MCP server 'silent' (stdio: {sys.executable} -c import time; "
        "time.sleep(30)): it did not answer within 0.5 s while starting "
        "(McpToolProvider(start_timeout=...))"
    )


def test_the_call_timeout_does_not_bound_the_start() -> None:
    """A short call timeout is for calls: a server may take longer than it to start."""
    slow = stdio(env={"WEATHER_START_DELAY": "1.0"})
    with McpToolProvider(slow, timeout=0.2) as provider:
        assert provider.get_tool_callbacks()


@pytest.mark.parametrize("option", ["timeout", "start_timeout"])
def test_timeouts_must_be_positive(option: str) -> None:
    with pytest.raises(ValueError, match=f"McpToolProvider\\({option}=...\\) must be positive"):
        McpToolProvider(stdio(), **{option: 0})


def test_a_command_that_does_not_exist_is_an_error_naming_it() -> None:
    with pytest.raises(McpServerError) as caught:
        McpToolProvider(StdioServer("weather-server-that-does-not-exist")).open()
    message = str(caught.value)
    assert message.startswith(
        "could not start MCP server 'weather-server-that-does-not-exist' (stdio): "
    )
    assert "FileNotFoundError" in message


def test_an_unreachable_http_server_is_an_error_naming_it() -> None:
    from tests.redis_servers import free_port

    url = f"http://127.0.0.1:{free_port()}/mcp"
    started = time.monotonic()
    with pytest.raises(McpServerError) as caught:
        McpToolProvider(HttpServer(url), timeout=5).open()
    assert time.monotonic() - started < 5
    assert str(caught.value).startswith(f"could not start MCP server '{url}' (streamable HTTP): ")
