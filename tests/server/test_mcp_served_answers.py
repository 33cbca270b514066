"""How ``/mcp`` answers a request of a session (the ``initialize`` handshake), on a real
uvicorn: in one JSON body when nothing may travel before the answer, over SSE when the call
asked for progress or its client can be asked (elicitation), so progress and questions still
reach the client; and the official client is served either way."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from graph_agent.server import create_app
from graph_agent.server._mcp import _sdk_missing
from tests._needs import need_module, unavailable

from .conftest import live_server
from .test_mcp_served import TOKEN, Approver, session, weather_agent
from .test_sdk_client import refund_agent

need_module("mcp", "the mcp extra: pip install 'graph-agent[mcp]' (make test)")
if _sdk_missing() is not None:
    unavailable(str(_sdk_missing()))

import httpx  # noqa: E402

from graph_agent.mcp import _sdk  # noqa: E402

HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Authorization": f"Bearer {TOKEN}",
    "MCP-Protocol-Version": "2025-11-25",
}


@pytest.fixture
def url() -> Iterator[str]:
    app = create_app({"weather": weather_agent(), "refunds": refund_agent()}, token=TOKEN)
    with live_server(app) as base:
        yield base


class Session:
    """A session of raw requests, as a client of the ``initialize`` handshake sends them."""

    def __init__(self, url: str, capabilities: dict[str, Any]) -> None:
        self.http = httpx.Client(base_url=url, headers=HEADERS, timeout=30)
        hello = {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "raw", "version": "1"},
        }
        opened = self.post("initialize", hello)
        self.opened = opened
        self.http.headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        done = self.http.post(
            "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        assert done.status_code == 202, done.text

    def post(self, method: str, params: dict[str, Any], ident: int = 1) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
        answer = self.http.post("/mcp", json=body)
        assert answer.status_code == 200, answer.text
        return answer

    def close(self) -> None:
        self.http.close()


def kind(answer: httpx.Response) -> str:
    return answer.headers["content-type"].split(";")[0]


def sse_messages(answer: httpx.Response) -> list[dict[str, Any]]:
    return [
        json.loads(line[5:])
        for line in answer.text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]


def call(message: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "weather", "arguments": {"message": message}}
    if meta:
        params["_meta"] = meta
    return params


def test_a_call_that_nothing_may_precede_is_answered_in_json(url: str) -> None:
    raw = Session(url, capabilities={})
    try:
        assert kind(raw.opened) == "application/json"
        assert raw.opened.json()["result"]["serverInfo"]["name"] == "graph-agent"
        listed = raw.post("tools/list", {}, 2)
        assert kind(listed) == "application/json"
        assert {t["name"] for t in listed.json()["result"]["tools"]} == {"refunds", "weather"}
        answer = raw.post("tools/call", call("Weather in Paris?"), 3)
        assert kind(answer) == "application/json"
        result = answer.json()
        assert result["id"] == 3
        assert result["result"]["content"][0]["text"] == "It is sunny in Paris."
        assert result["result"]["_meta"]["thread_id"]
    finally:
        raw.close()


def test_a_call_that_asked_for_progress_gets_it_on_its_stream(url: str) -> None:
    raw = Session(url, capabilities={})
    try:
        answer = raw.post("tools/call", call("Weather in Paris?", {"progressToken": "p1"}), 2)
        assert kind(answer) == "text/event-stream"
        messages = sse_messages(answer)
        progress = [m for m in messages if m.get("method") == "notifications/progress"]
        assert progress and all(m["params"]["progressToken"] == "p1" for m in progress)
        assert "calling get_weather" in [m["params"].get("message") for m in progress]
        assert messages[-1]["id"] == 2
        assert messages[-1]["result"]["content"][0]["text"] == "It is sunny in Paris."
    finally:
        raw.close()


def test_a_client_that_can_be_asked_gets_its_calls_on_a_stream(url: str) -> None:
    raw = Session(url, capabilities={"elicitation": {}})
    try:
        answer = raw.post("tools/call", call("Weather in Paris?"), 2)
        assert kind(answer) == "text/event-stream"
        assert sse_messages(answer)[-1]["result"]["content"][0]["text"] == "It is sunny in Paris."
    finally:
        raw.close()


def test_the_official_client_is_answered_either_way(url: str) -> None:
    """(A client that cannot be asked, answered in JSON, gets the error naming the waiting
    thread: test_mcp_served.py.)"""
    elicit = Approver()

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with session(url) as plain:  # answered in JSON
            weather = _sdk.wire(await plain.call_tool("weather", {"message": "Weather?"}))
        async with session(url, elicitation_callback=elicit) as asked:  # over SSE
            refunded = _sdk.wire(await asked.call_tool("refunds", {"message": "Refund me 5"}))
        return weather, refunded

    weather, refunded = asyncio.run(scenario())
    assert weather["content"][0]["text"] == "It is sunny in Paris."
    assert refunded["content"][0]["text"] == "Refunded 5." and len(elicit.asked) == 1
