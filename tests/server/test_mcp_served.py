"""Served agents as MCP tools at ``/mcp``, driven by the official ``mcp`` client over
streamable HTTP against a real uvicorn: the tools listed, a call on a new thread and a
follow-up on its thread, the call seen over the Agent Protocol (``langgraph-sdk``), progress,
an interrupt asked as an elicitation (or returned as an error result), bad arguments and
malformed requests, the token."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pytest

from checkpoint import MemorySaver
from graph_agent import ReactAgent, ScriptedChatModel
from graph_agent.server import create_app
from graph_agent.server._mcp import _sdk_missing
from tests._needs import need_module, unavailable

from .conftest import live_server
from .served_kit import get_weather
from .test_sdk_client import asks, refund_agent

need_module("mcp", "the mcp extra: pip install 'graph-agent[mcp]' (make test)")
if _sdk_missing() is not None:  # the SDK's server side as it is in 2.x
    unavailable(str(_sdk_missing()))

from mcp import ClientSession  # noqa: E402

from graph_agent.mcp import _sdk  # noqa: E402

TOKEN = "s3cret"
T = TypeVar("T")


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


class Approver:
    """An elicitation callback that approves the refund and keeps what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: Any) -> Any:
        from mcp_types import ElicitResult

        self.asked.append(params.message)
        answer = json.dumps({"tool_call_id": "call_1", "decision": "approved"})
        return ElicitResult(action="accept", content={"answer": answer})


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


def run(scenario: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(scenario())


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


def test_a_call_is_a_run_seen_over_the_agent_protocol(url: str) -> None:
    from langgraph_sdk import get_client

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with session(url) as client:
            first = _sdk.wire(await client.call_tool("weather", {"message": "Weather in Paris?"}))
            thread = first["_meta"]["thread_id"]
            await client.call_tool("weather", {"message": "What did I ask?", "thread_id": thread})
        async with get_client(url=url, api_key=TOKEN) as protocol:
            seen = await protocol.runs.get(thread, first["_meta"]["run_id"])
            state = await protocol.threads.get_state(thread)
        return first, seen, state

    first, seen, state = run(scenario)
    assert seen["status"] == "success"
    assert seen["thread_id"] == first["_meta"]["thread_id"]
    assert seen["metadata"] == {"via": "mcp"}
    said = [(m["type"], m["content"]) for m in state["values"]["messages"]]
    # the follow-up went on with the first call's conversation
    assert said[0] == ("human", "Weather in Paris?")
    assert said[3] == ("ai", "It is sunny in Paris.")
    assert said[4:] == [("human", "What did I ask?"), ("ai", "You asked about Paris.")]


def test_progress_comes_from_the_run_events(url: str) -> None:
    notes: list[tuple[float, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        notes.append((done, message))

    async def scenario() -> dict[str, Any]:
        async with session(url) as client:
            result = await client.call_tool(
                "weather", {"message": "Weather in Paris?"}, progress_callback=progress
            )
            return _sdk.wire(result)

    assert run(scenario)["content"][0]["text"] == "It is sunny in Paris."
    assert [done for done, _ in notes] == list(range(1, len(notes) + 1))
    said = [message for _, message in notes]
    assert "calling get_weather" in said
    assert said.index("calling get_weather") < said.index("get_weather answered")


def test_an_interrupt_is_asked_of_the_client_and_its_answer_resumes_the_run(url: str) -> None:
    elicit = Approver()

    async def scenario() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        from langgraph_sdk import get_client

        async with session(url, elicitation_callback=elicit) as client:
            result = _sdk.wire(await client.call_tool("refunds", {"message": "Refund me 5"}))
        async with get_client(url=url, api_key=TOKEN) as protocol:
            return result, list(await protocol.runs.list(result["_meta"]["thread_id"]))

    result, runs = run(scenario)
    # two runs on the thread: the question, then the answer
    assert [(r["status"], r["metadata"]) for r in runs] == [("success", {"via": "mcp"})] * 2
    assert result["_meta"]["run_id"] == runs[0]["run_id"]
    assert not result.get("isError")
    assert result["content"][0]["text"] == "Refunded 5."
    assert len(elicit.asked) == 1 and elicit.asked[0].startswith("The agent refunds asks: ")
    assert (
        '"refund"' in elicit.asked[0]
    )  # the interrupt's value: the tool call waiting for approval


def test_a_client_that_cannot_be_asked_gets_an_error_naming_the_waiting_thread(
    url: str,
) -> None:
    from langgraph_sdk import get_client

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with session(url) as client:  # no elicitation callback: it cannot be asked
            result = _sdk.wire(await client.call_tool("refunds", {"message": "Refund me 5"}))
        thread = result["_meta"]["thread_id"]
        async with get_client(url=url, api_key=TOKEN) as protocol:
            done = await protocol.runs.wait(
                thread,
                "refunds",
                command={"resume": {"tool_call_id": "call_1", "decision": "approved"}},
            )
        return result, done

    result, done = run(scenario)
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith("the agent is waiting for a person: ")
    assert repr(result["_meta"]["thread_id"]) in text
    # answered over the Agent Protocol, as the error says
    assert done["messages"][-1]["content"] == "Refunded 5."


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("weather", {}, "message must be a non-empty string, got None"),
        ("weather", {"message": 3}, "message must be a non-empty string, got 3"),
        ("weather", {"message": "hi", "city": "Paris"}, "unknown arguments ['city']"),
        ("weather", {"message": "hi", "thread_id": 7}, "thread_id must be a non-empty string"),
        ("nobody", {"message": "hi"}, "there is no tool 'nobody'; the tools are: refunds, weather"),
    ],
)
def test_bad_arguments_are_an_error_result(
    url: str, name: str, arguments: dict[str, Any], says: str
) -> None:
    async def scenario() -> dict[str, Any]:
        async with session(url) as client:
            return _sdk.wire(await client.call_tool(name, arguments))

    result = run(scenario)
    assert result["isError"] is True
    assert says in result["content"][0]["text"]


def test_a_thread_of_another_agent_is_an_error_result(url: str) -> None:
    async def scenario() -> dict[str, Any]:
        async with session(url) as client:
            first = _sdk.wire(await client.call_tool("weather", {"message": "Weather?"}))
            thread = first["_meta"]["thread_id"]
            return _sdk.wire(
                await client.call_tool("refunds", {"message": "Refund", "thread_id": thread})
            )

    result = run(scenario)
    assert result["isError"] is True
    assert "belongs to 'weather', not 'refunds'" in result["content"][0]["text"]


def test_the_token_is_needed(url: str) -> None:
    import httpx

    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    refused = httpx.post(f"{url}/mcp", json=hello, headers=accept)
    assert refused.status_code == 401
    assert "detail" in refused.json()
    wrong = httpx.post(f"{url}/mcp", json=hello, headers={**accept, "X-Api-Key": "nope"})
    assert wrong.status_code == 401

    async def scenario() -> None:
        async with session(url, token=None):
            pass

    with pytest.raises(Exception) as refused_client:  # in the SDK's task groups
        run(scenario)
    assert "Server returned an error response" in repr(refused_client.value)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{nope", -32700),  # not JSON
        (b"[1, 2]", -32602),  # not a JSON-RPC message
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}', -32600),  # no session
    ],
)
def test_a_malformed_request_is_a_protocol_error(url: str, body: bytes, code: int) -> None:
    import httpx

    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": f"Bearer {TOKEN}",
    }
    answer = httpx.post(f"{url}/mcp", content=body, headers=headers)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == code
