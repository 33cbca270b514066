"""The server's token (``--token``) as ``langgraph-sdk`` sends it: ``api_key=`` (the
``X-Api-Key`` header), as well as ``Authorization: Bearer``; anything else is a JSON 401,
and ``GET /ok`` needs no token."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client

from checkpoint import MemorySaver
from graph_agent import ReactAgent, ScriptedChatModel
from graph_agent.server import create_app

from .conftest import live_server

HI = {"messages": [{"role": "user", "content": "hi"}]}


def agent() -> ReactAgent:
    return ReactAgent(name="a", model=ScriptedChatModel(["ok"] * 5), saver=MemorySaver())


def test_the_sdk_api_key_is_the_token() -> None:
    with live_server(create_app({"a": agent()}, token="s3cret")) as url:
        with get_sync_client(url=url, api_key="s3cret") as client:
            thread = client.threads.create()
            answer = client.runs.wait(thread["thread_id"], "a", input=HI)
            assert isinstance(answer, dict) and answer["messages"][-1]["content"] == "ok"
        wrong = get_sync_client(url=url, api_key="wrong")
        with wrong, pytest.raises(httpx.HTTPStatusError) as refused:
            wrong.threads.create()
        assert refused.value.response.status_code == 401
        assert "X-Api-Key" in refused.value.response.json()["detail"]
        with get_sync_client(url=url, headers={"Authorization": "Bearer s3cret"}) as client:
            assert client.assistants.get("a")["graph_id"] == "a"
        # either header right is enough; none, a wrong one, or the key as a bearer is not
        assert httpx.get(url + "/assistants/a").status_code == 401
        assert httpx.get(url + "/assistants/a", headers={"x-api-key": "s3cre"}).status_code == 401
        bearer_key = {"Authorization": "s3cret"}
        assert httpx.get(url + "/assistants/a", headers=bearer_key).status_code == 401
        both = {"x-api-key": "wrong", "Authorization": "Bearer s3cret"}
        assert httpx.get(url + "/assistants/a", headers=both).status_code == 200
        assert httpx.get(url + "/ok").status_code == 200


def test_the_async_sdk_api_key_is_the_token() -> None:
    async def scenario(url: str) -> str:
        async with get_client(url=url, api_key="s3cret") as client:
            thread = await client.threads.create()
            return str((await client.threads.get(thread["thread_id"]))["status"])

    with live_server(create_app({"a": agent()}, token="s3cret")) as url:
        assert asyncio.run(scenario(url)) == "idle"
