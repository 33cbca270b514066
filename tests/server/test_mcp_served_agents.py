"""One of our agents uses another served agent as a tool through ``McpToolProvider`` (the
``/mcp`` of a real uvicorn); an agent's structured output comes back as structured content;
a call the client cancels cancels its run; ``graph-agent serve --token`` serves ``/mcp``;
without the SDK 2.x, ``/mcp`` says what to install."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from checkpoint import MemorySaver
from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall
from graph_agent.server import create_app
from tests.redis_servers import free_port

from .conftest import live_server
from .test_mcp_served import TOKEN, session, weather_agent


class Forecast(BaseModel):
    city: str
    sky: str


def forecast_agent() -> ReactAgent:
    answer = ToolCall(
        id="f1", name="final_answer_forecast", arguments=json.dumps({"city": "Oslo", "sky": "grey"})
    )
    return ReactAgent(
        name="forecast",
        model=ScriptedChatModel([AssistantMessage("", tool_calls=(answer,))]),
        output_type=Forecast,
        saver=MemorySaver(),
    )


@pytest.fixture
def url() -> Iterator[str]:
    app = create_app({"weather": weather_agent(), "forecast": forecast_agent()}, token=TOKEN)
    with live_server(app) as base:
        yield base


def test_an_agent_uses_a_served_agent_as_a_tool(url: str) -> None:
    from graph_agent.mcp import HttpServer, McpToolProvider  # (the mcp extra: checked above)

    call = ToolCall(id="c1", name="weather", arguments=json.dumps({"message": "Paris?"}))
    model = ScriptedChatModel([AssistantMessage("", tool_calls=(call,)), "Paris is sunny."])
    served = HttpServer(f"{url}/mcp", headers={"Authorization": f"Bearer {TOKEN}"})
    with McpToolProvider(served) as remote:
        offered = {t.tool_definition.name: t for t in remote.get_tool_callbacks()}
        agent = ReactAgent(name="planner", model=model, tools=[offered["weather"]])
        state = agent.invoke("Should I take an umbrella to Paris?", {"thread_id": "p1"})
    assert sorted(offered) == ["forecast", "weather"]
    assert offered["weather"].tool_definition.description == "Tells the weather of a city."
    # the served agent's final answer is what the calling agent's model got back
    assert state["messages"][2].responses[0].response_data == "It is sunny in Paris."
    assert state["messages"][-1].text == "Paris is sunny."


def test_structured_output_is_structured_content(url: str) -> None:
    from graph_agent.mcp import _sdk

    async def scenario() -> dict[str, Any]:
        async with session(url) as client:
            return _sdk.wire(await client.call_tool("forecast", {"message": "Oslo?"}))

    result = asyncio.run(scenario())
    assert not result.get("isError")
    assert result["structuredContent"] == {"city": "Oslo", "sky": "grey"}


def test_without_the_sdk_2_mcp_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    from graph_agent.server import _mcp

    monkeypatch.setattr(_mcp, "_sdk_missing", lambda: "serving agents over MCP needs ...")
    app = create_app({"weather": weather_agent()})
    with live_server(app) as base:
        answer = httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        ok = httpx.get(f"{base}/ok")
    assert answer.status_code == 501
    assert answer.json() == {"detail": "serving agents over MCP needs ..."}
    assert ok.status_code == 200  # the Agent Protocol is served all the same


def test_a_call_the_client_cancels_cancels_its_run() -> None:
    import anyio
    from langgraph_sdk import get_client

    from .gate_kit import Gate

    gate = Gate()
    app = create_app({"held": gate.agent()})
    gate.watch(app)

    async def scenario(url: str) -> list[dict[str, Any]]:
        started = anyio.Event()

        async def progress(done: float, total: float | None, message: str | None) -> None:
            if message == "calling hold":
                started.set()

        async with session(url, token=None) as client, anyio.create_task_group() as calls:

            async def call() -> None:
                arguments = {"message": "wait", "thread_id": "t-held"}
                await client.call_tool("held", arguments, progress_callback=progress)

            calls.start_soon(call)
            await started.wait()  # the run is in its tool
            calls.cancel_scope.cancel()
        async with get_client(url=url) as protocol:
            runs = await protocol.runs.list("t-held")
            await protocol.runs.join("t-held", runs[0]["run_id"])
            return list(await protocol.runs.list("t-held"))

    with live_server(app) as base:
        runs = asyncio.run(scenario(base))
    assert [run["status"] for run in runs] == ["interrupted"]  # the Agent Protocol's cancelled


def test_graph_agent_serve_serves_mcp_with_its_token(tmp_path: Path) -> None:
    from .conftest import serve_process, stop_process

    module = tmp_path / "app.py"
    module.write_text(
        "from graph_agent import ReactAgent, ScriptedChatModel\n"
        "agent = ReactAgent(name='helper', description='Says hi.', "
        "model=ScriptedChatModel(['hi']))\n"
    )
    port = free_port()
    process = serve_process(module, tmp_path / "threads.sqlite", port, "--token", TOKEN)

    async def scenario() -> tuple[list[str], str]:
        async with session(f"http://127.0.0.1:{port}") as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            result = await client.call_tool("helper", {"message": "hello"})
            return tools, result.content[0].text

    try:
        tools, said = asyncio.run(scenario())
    finally:
        stop_process(process)
    assert (tools, said) == (["helper"], "hi")  # served under the agent's name
