"""Served agents as MCP tools at ``/mcp``, driven by the official ``mcp`` client over
streamable HTTP against a real uvicorn: the tools listed, a call on a new thread and a
follow-up on its thread, the call seen over the Agent Protocol (``langgraph-sdk``), progress,
an interrupt asked as an elicitation (or returned as an error result), bad arguments, the
token."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import ReactAgent, ScriptedChatModel
from graph_agent.server import create_app
from hooks import HumanInTheLoopHook

from .conftest import live_server
from .served_kit import get_weather, refund
from .test_sdk_client import asks

mcp = pytest.importorskip("mcp")
if int(__import__("importlib.metadata").metadata.version("mcp").split(".")[0]) < 2:
    pytest.skip("serving over MCP needs the mcp SDK 2.x", allow_module_level=True)

from mcp import ClientSession  # noqa: E402

from graph_agent.mcp import _sdk  # noqa: E402

TOKEN = "s3cret"


def weather_agent() -> ReactAgent:
    model = ScriptedChatModel(
        [asks("get_weather", {"city": "Paris"}), "It is sunny in Paris.", "You asked about Paris."]
    )
    return ReactAgent(
        name="weather",
        description="Tells the weather of a city.",
        model=model,
        tools=[get_weather],
        saver=MemorySaver(),
    )


def refund_agent() -> ReactAgent:
    model = ScriptedChatModel([asks("refund", {"amount": 5}), "Refunded 5."])
    return ReactAgent(
        name="refunds",
        model=model,
        tools=[refund],
        hooks=[HumanInTheLoopHook(["refund"])],
        saver=MemorySaver(),
    )


@pytest.fixture
def url() -> Iterator[str]:
    app = create_app({"weather": weather_agent(), "refunds": refund_agent()}, token=TOKEN)
    with live_server(app) as base:
        yield base


@asynccontextmanager
async def session(
    url: str, token: str | None = TOKEN, **callbacks: Any
) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        _sdk.http_streams(f"{url}/mcp", headers) as (read, write),
        ClientSession(read, write, **callbacks) as client,
    ):
        await client.initialize()
        yield client


def run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(scenario())  # type: ignore[arg-type]


def test_each_served_agent_is_a_tool(url: str) -> None:
    async def scenario() -> list[dict[str, Any]]:
        async with session(url) as client:
            return [_sdk.wire(tool) for tool in (await client.list_tools()).tools]

    tools = {tool["name"]: tool for tool in run(scenario)}
    assert sorted(tools) == ["refunds", "weather"]
    assert tools["weather"]["description"] == "Tells the weather of a city."
    schema = tools["weather"]["inputSchema"]
    assert schema["required"] == ["message"]
    assert set(schema["properties"]) == {"message", "thread_id"}


def test_a_call_answers_and_a_follow_up_goes_on_with_the_thread(url: str) -> None:
    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with session(url) as client:
            first = _sdk.wire(await client.call_tool("weather", {"message": "Weather in Paris?"}))
            thread = first["_meta"]["thread_id"]
            second = _sdk.wire(
                await client.call_tool(
                    "weather", {"message": "What did I ask?", "thread_id": thread}
                )
            )
            return first, second

    first, second = run(scenario)
    assert not first.get("isError")
    assert first["content"] == [{"type": "text", "text": "It is sunny in Paris."}]
    assert second["content"][0]["text"] == "You asked about Paris."
    assert second["_meta"]["thread_id"] == first["_meta"]["thread_id"]
    assert second["_meta"]["run_id"] != first["_meta"]["run_id"]
