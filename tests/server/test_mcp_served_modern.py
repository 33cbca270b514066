"""``/mcp`` with a client of the 2026-07-28 revision (the official ``mcp.Client``, its
per-request envelope, no ``initialize`` handshake): a call on a thread and a follow-up, an
interrupt asked as the call's ``input_required`` result and answered by the client's retry,
a ``request_state`` the server did not send refused as an error result."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from graph_agent.server import create_app

from .conftest import live_server
from .test_mcp_served import TOKEN, Approver, refund_agent, weather_agent

MODERN = "2026-07-28"


@pytest.fixture
def url() -> Iterator[str]:
    app = create_app({"weather": weather_agent(), "refunds": refund_agent()}, token=TOKEN)
    with live_server(app) as base:
        yield base


@asynccontextmanager
async def modern(url: str, **options: Any) -> AsyncIterator[Any]:
    """A ``mcp.Client`` pinned to 2026-07-28, with the token."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with Client(transport, mode=MODERN, **options) as client:
            yield client


def test_a_call_and_a_follow_up_on_its_thread(url: str) -> None:
    async def scenario() -> tuple[Any, Any]:
        async with modern(url) as client:
            first = await client.call_tool("weather", {"message": "Weather in Paris?"})
            follow_up = {"message": "What did I ask?", "thread_id": first.meta["thread_id"]}
            return first, await client.call_tool("weather", follow_up)

    first, second = asyncio.run(scenario())
    assert first.content[0].text == "It is sunny in Paris."
    assert second.content[0].text == "You asked about Paris."
    assert second.meta["thread_id"] == first.meta["thread_id"]


def test_an_interrupt_is_an_input_required_result_answered_by_the_retry(url: str) -> None:
    elicit = Approver()

    async def scenario() -> Any:
        async with modern(url, elicitation_callback=elicit) as client:
            return await client.call_tool("refunds", {"message": "Refund me 5"})

    result = asyncio.run(scenario())
    assert not result.is_error
    assert result.content[0].text == "Refunded 5."
    assert len(elicit.asked) == 1 and elicit.asked[0].startswith("The agent refunds asks: ")


def test_a_declined_question_leaves_the_thread_waiting(url: str) -> None:
    from mcp_types import ElicitResult

    async def decline(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="decline")

    async def scenario() -> Any:
        async with modern(url, elicitation_callback=decline) as client:
            return await client.call_tool("refunds", {"message": "Refund me 5"})

    result = asyncio.run(scenario())
    assert result.is_error
    text = result.content[0].text
    assert text.startswith("the person did not answer the agent's question; the agent still waits")
    assert repr(result.meta["thread_id"]) in text


def test_a_request_state_the_server_did_not_send_is_an_error_result(url: str) -> None:
    async def scenario() -> Any:
        async with modern(url) as client:
            return await client.call_tool(
                "refunds", {"message": "Refund me 5"}, request_state="made up"
            )

    result = asyncio.run(scenario())
    assert result.is_error
    assert "request_state 'made up' is not one this server sent" in result.content[0].text
