"""The served app tells anyio its loop is asyncio's (``sniffio``'s context variable), so that
anyio, which Starlette and the MCP SDK call hundreds of times a request, reads it instead of
sniffing the loop on each call: a run started over the Agent Protocol (a request's context)
and one started over MCP (a session of the SDK, started in the app's lifespan) both run
where it is said."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
import sniffio
from langgraph_sdk import get_sync_client

from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall, tool
from graph_agent.server import create_app
from tests._needs import need_module

from .conftest import live_server

need_module("mcp.server.lowlevel", "the mcp extra (SDK 2.x): make test installs it")

from .test_mcp_served import session  # noqa: E402

said: list[str | None] = []


@tool
async def where() -> str:
    """Says which async library the run's context declares."""
    said.append(sniffio.current_async_library_cvar.get())
    return "noted"


def noting_agent() -> ReactAgent:
    call = AssistantMessage("", tool_calls=[ToolCall(id="call_1", name="where", arguments="{}")])
    model = ScriptedChatModel([call, "Noted."] * 4)
    return ReactAgent(name="noting", model=model, tools=[where])


@pytest.fixture
def url() -> Iterator[str]:
    with live_server(create_app({"noting": noting_agent()})) as base:
        yield base


def test_runs_over_the_agent_protocol_and_mcp_run_where_asyncio_is_declared(url: str) -> None:
    said.clear()
    with get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        done = client.runs.wait(
            thread, "noting", input={"messages": [{"role": "user", "content": "go"}]}
        )
        assert isinstance(done, dict) and done["messages"][-1]["content"] == "Noted."

    async def over_mcp() -> str:
        async with session(url, token=None) as client:
            result = await client.call_tool("noting", {"message": "go"})
            return json.dumps([c.text for c in result.content])

    assert asyncio.run(over_mcp()) == '["Noted."]'
    assert said == ["asyncio", "asyncio"]
