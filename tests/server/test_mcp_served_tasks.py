"""MCP's Tasks at ``/mcp`` with the official ``mcp`` client of 2026-07-28 (its
``ClientExtension`` declares ``io.modelcontextprotocol/tasks``; ``tasks/*`` sent through its
session, see mcp_tasks_kit): a long call becomes a task polled to the agent's answer, an
interrupt is the task's ``input_required`` answered with ``tasks/update``, ``tasks/cancel``
cancels the run (over the Agent Protocol too), a quick call is answered at once, a bad task
id is a protocol error, the token is asked."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import pytest

from graph_agent.server import create_app

from .conftest import live_server
from .gate_kit import Gate
from .test_mcp_served import TOKEN, refund_agent, weather_agent

from .mcp_tasks_kit import Tasks, cancel, get, listen, modern, until, update  # isort: skip


@pytest.fixture
def gate() -> Iterator[Gate]:
    gate = Gate()
    try:
        yield gate
    finally:
        gate.open()  # nothing stays held when a test fails


@pytest.fixture
def url(gate: Gate) -> Iterator[str]:
    gate.close()
    agents = {"held": gate.agent(), "weather": weather_agent(), "refunds": refund_agent()}
    app = create_app(agents, token=TOKEN)
    gate.watch(app)
    with live_server(app) as base:
        yield base


async def start(client: Any, tool: str, message: str) -> Any:
    """The call's result as the server sent it: a task handle, or the tool's result."""
    return await client.session.call_tool(tool, {"message": message}, allow_claimed=True)


def test_a_long_call_is_a_task_polled_to_the_agent_answer(url: str, gate: Gate) -> None:
    async def scenario() -> tuple[Any, dict[str, Any], dict[str, Any]]:
        async with modern(url, TOKEN, extensions=[Tasks()]) as client:
            handle = await start(client, "held", "slow")
            working = await get(client.session, handle.task_id)
            gate.open()
            return handle, working, await until(client.session, handle.task_id)

    handle, working, done = asyncio.run(scenario())
    assert (handle.result_type, handle.status) == ("task", "working")
    assert working["status"] == "working" and working["taskId"] == handle.task_id
    assert working["resultType"] == "complete"
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "done: held slow"}]
    # the task is the call's run
    assert done["result"]["_meta"]["run_id"] == handle.task_id


def test_the_client_extension_resolves_the_task_transparently(url: str, gate: Gate) -> None:
    tasks = Tasks()

    async def scenario() -> Any:
        async with modern(url, TOKEN, extensions=[tasks]) as client:
            call = asyncio.ensure_future(client.call_tool("held", {"message": "slow"}))
            await tasks.handed.wait()  # the call was answered with a task
            gate.open()
            return await call

    result = asyncio.run(scenario())
    assert result.content[0].text == "done: held slow"
    assert tasks.seen[-1]["status"] == "completed"  # it was a task, polled to its end


def test_an_interrupt_is_input_required_and_answered_with_tasks_update(url: str) -> None:
    from langgraph_sdk import get_client

    async def scenario() -> tuple[Any, dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        async with modern(url, TOKEN, extensions=[Tasks()]) as client:
            handle = await start(client, "refunds", "Refund me 5")
            asked = await until(client.session, handle.task_id, "input_required")
            [key] = asked["inputRequests"]
            answer = json.dumps({"tool_call_id": "call_1", "decision": "approved"})
            reply = {"action": "accept", "content": {"answer": answer}}
            await update(client.session, handle.task_id, {key: reply})
            done = await until(client.session, handle.task_id)
        async with get_client(url=url, api_key=TOKEN) as protocol:
            runs = await protocol.runs.list(done["result"]["_meta"]["thread_id"])
        return handle, asked, done, list(runs)

    handle, asked, done, runs = asyncio.run(scenario())
    assert handle.status == "input_required"
    [(key, request)] = asked["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"].startswith("The agent refunds asks: ")
    assert '"refund"' in request["params"]["message"]
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "Refunded 5."
    assert done["taskId"] == handle.task_id
    # the question's run, then the answer's: both success, both the task's
    assert [r["status"] for r in runs] == ["success", "success"]
    assert runs[-1]["run_id"] == handle.task_id
    assert runs[0]["kwargs"]["command"] == {
        "resume": {key: {"tool_call_id": "call_1", "decision": "approved"}}
    }


def test_a_declined_question_cancels_the_task_and_leaves_the_thread_waiting(url: str) -> None:
    from langgraph_sdk import get_client

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with modern(url, TOKEN, extensions=[Tasks()]) as client:
            handle = await start(client, "refunds", "Refund me 5")
            asked = await until(client.session, handle.task_id, "input_required")
            [key] = asked["inputRequests"]
            await update(client.session, handle.task_id, {key: {"action": "decline"}})
            ended = await get(client.session, handle.task_id)
        async with get_client(url=url, api_key=TOKEN) as protocol:
            thread = await protocol.threads.get(ended["_meta"]["thread_id"])
        return ended, dict(thread)

    ended, thread = asyncio.run(scenario())
    assert ended["status"] == "cancelled"
    assert ended["statusMessage"] == "the person did not answer the agent's question"
    assert thread["status"] == "interrupted"  # still waits: answerable over the Agent Protocol


def test_tasks_cancel_cancels_the_run(url: str, gate: Gate) -> None:
    from langgraph_sdk import get_client

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with modern(url, TOKEN, extensions=[Tasks()]) as client:
            handle = await start(client, "held", "slow")
            await anyio.to_thread.run_sync(gate.wait_entered, 1)
            acked = await cancel(client.session, handle.task_id)
            ended = await until(client.session, handle.task_id)
        thread = ended["_meta"]["thread_id"]
        async with get_client(url=url, api_key=TOKEN) as protocol:
            run = await protocol.runs.get(thread, handle.task_id)
        return acked, ended, run

    acked, ended, run = asyncio.run(scenario())
    assert acked["resultType"] == "complete"
    assert ended["status"] == "cancelled"
    assert run["status"] == "interrupted"  # the Agent Protocol's cancelled


def test_a_quick_call_of_a_client_that_takes_tasks_is_answered_at_once(url: str) -> None:
    notes: list[str | None] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        notes.append(message)

    async def scenario() -> Any:
        async with modern(url, TOKEN, extensions=[Tasks()]) as client:
            return await client.session.call_tool(
                "weather",
                {"message": "Weather in Paris?"},
                progress_callback=progress,
                allow_claimed=True,
            )

    result = asyncio.run(scenario())
    assert result.content[0].text == "It is sunny in Paris."
    assert "calling get_weather" in notes  # its progress, as for a call that waits


def test_an_answer_the_approval_does_not_take_is_a_protocol_error(url: str) -> None:
    from mcp import MCPError

    async def scenario() -> tuple[MCPError, dict[str, Any]]:
        async with modern(url, TOKEN, extensions=[Tasks()]) as client:
            handle = await start(client, "refunds", "Refund me 5")
            asked = await until(client.session, handle.task_id, "input_required")
            [key] = asked["inputRequests"]
            wrong = {"action": "accept", "content": {"answer": '"yes please"'}}
            with pytest.raises(MCPError) as refused:
                await update(client.session, handle.task_id, {key: wrong})
            return refused.value, await get(client.session, handle.task_id)

    refused, still = asyncio.run(scenario())
    assert refused.error.code == -32602
    assert "does not answer the approval" in refused.error.message
    assert still["status"] == "input_required"  # asked still, under the same key


def refusal(url: str, send: Callable[[Any], Awaitable[Any]], *, tasks: bool = True) -> Any:
    """The protocol error ``send(session)`` gets, from a client that declares Tasks (or
    not)."""
    from mcp import MCPError

    async def scenario() -> MCPError:
        options: dict[str, Any] = {"extensions": [Tasks()]} if tasks else {}
        async with modern(url, TOKEN, **options) as client:
            with pytest.raises(MCPError) as refused:
                await send(client.session)
            return refused.value

    return asyncio.run(scenario())


@pytest.mark.parametrize(
    "send",
    [
        lambda session: get(session, "no-such-task"),
        lambda session: update(session, "no-such-task", {}),
        lambda session: cancel(session, "no-such-task"),
    ],
    ids=["get", "update", "cancel"],
)
def test_a_bad_task_id_is_a_protocol_error(url: str, send: Callable[[Any], Awaitable[Any]]) -> None:
    refused = refusal(url, send)
    assert refused.error.code == -32602
    assert "task 'no-such-task' not found" in refused.error.message


def test_tasks_methods_need_the_extension_declared(url: str) -> None:
    refused = refusal(url, lambda session: get(session, "anything"), tasks=False)
    assert refused.error.code == -32021
    assert "io.modelcontextprotocol/tasks" in refused.error.message


def test_the_token_is_needed_for_tasks(url: str) -> None:
    import httpx

    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": "x"}}
    headers = {
        "Accept": "application/json, text/event-stream",
        "Mcp-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tasks/get",
        "Mcp-Name": "x",
    }
    refused = httpx.post(f"{url}/mcp", json=body, headers=headers)
    assert refused.status_code == 401
    assert "detail" in refused.json()

    async def scenario() -> None:
        async with modern(url, None, extensions=[Tasks()]) as client:
            await get(client.session, "x")

    with pytest.raises(Exception) as refused_client:  # in the SDK's task groups
        asyncio.run(scenario())
    assert "Server returned an error response" in repr(refused_client.value)


def test_a_client_of_the_handshake_is_told_tasks_are_not_its_methods(url: str) -> None:
    from mcp import MCPError

    from .mcp_tasks_kit import GetTask, TaskParams
    from .test_mcp_served import session

    async def scenario() -> MCPError:
        async with session(url) as client:
            with pytest.raises(MCPError) as refused:
                await client.send_request(GetTask(params=TaskParams(taskId="x")), dict)
            return refused.value

    refused = asyncio.run(scenario())
    assert refused.error.code == -32601  # method not found, at its protocol version
    assert "2026-07-28" in refused.error.message


def test_a_listen_stream_pushes_the_task_until_it_ends(url: str, gate: Gate) -> None:
    tasks = Tasks()

    async def scenario() -> tuple[Any, Any]:
        async with modern(url, TOKEN, extensions=[tasks]) as client:
            handle = await start(client, "held", "slow")
            listening = asyncio.ensure_future(listen(client.session, handle.task_id))
            await tasks.arrived.wait()  # the task as it stands: working
            gate.open()
            return handle, await listening

    handle, ended = asyncio.run(scenario())
    assert ended.meta["io.modelcontextprotocol/subscriptionId"] is not None
    assert [p["status"] for p in tasks.pushed] == ["working", "completed"]
    assert {p["taskId"] for p in tasks.pushed} == {handle.task_id}
    assert tasks.pushed[-1]["result"]["content"][0]["text"] == "done: held slow"


def test_a_listen_for_unknown_tasks_ends_at_once_and_one_without_tasks_is_refused(
    url: str,
) -> None:
    from mcp import MCPError

    tasks = Tasks()

    async def scenario() -> tuple[Any, MCPError]:
        async with modern(url, TOKEN, extensions=[tasks]) as client:
            ended = await listen(client.session, "no-such-task")
        async with modern(url, TOKEN) as client:
            with pytest.raises(MCPError) as refused:
                await listen(client.session, "no-such-task")
        return ended, refused.value

    ended, refused = asyncio.run(scenario())
    assert ended.meta["io.modelcontextprotocol/subscriptionId"] is not None
    assert tasks.pushed == []
    assert refused.error.code == -32021
