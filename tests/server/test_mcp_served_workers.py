"""``/mcp`` on servers whose runs are run by workers (``graph-agent serve --queue`` and
``graph-agent worker``, real processes on one redis-server): a call over MCP whose run a
worker runs, its progress and its interrupt asked of the client and answered; a call that
becomes a task on one server, read, answered and finished through the other."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests._needs import need_module
from tests.redis_servers import redis_server
from tests.runs.worker_kit import Fleet, fleet

from .test_mcp_served import Approver, session

need_module("docket", "the queue extra: pip install -e '.[queue]' (make test)")

from .mcp_tasks_kit import Tasks, get, modern, until, update  # noqa: E402

AGENT = '''
import json
from graph_agent import AssistantMessage, FunctionChatModel, ReactAgent, ToolCall, tool
from graph_agent import ToolResponseMessage
from hooks import HumanInTheLoopHook

@tool
def refund(amount: int) -> str:
    """Refund an amount."""
    return f"refunded {amount}"

def reply(prompt):
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return AssistantMessage(f"Refunded: {last.responses[0].response_data}.")
    call = ToolCall(id="call_1", name="refund", arguments=json.dumps({"amount": 5}))
    return AssistantMessage("", tool_calls=[call])

agent = ReactAgent(
    name="refunds", model=FunctionChatModel(reply), tools=[refund],
    hooks=[HumanInTheLoopHook(["refund"])],
)
'''
APPROVED = json.dumps({"tool_call_id": "call_1", "decision": "approved"})


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """Two servers on ``--queue`` and one worker, serving the refunds agent (for the
    module: each test on threads of its own)."""
    tmp_path = tmp_path_factory.mktemp("fleet")
    with (
        redis_server(tmp_path / "redis") as port,
        fleet(f"redis://127.0.0.1:{port}/0", tmp_path) as f,
    ):
        f.module.write_text(AGENT)
        f.serve()
        f.serve()
        f.worker()
        yield f


def test_a_call_run_by_a_worker_asks_its_interrupt_and_answers(servers: Fleet) -> None:
    from langgraph_sdk import get_client

    first = servers.servers[0][1]
    elicit = Approver()
    notes: list[str | None] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        notes.append(message)

    async def scenario() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        from graph_agent.mcp import _sdk

        async with session(first, token=None, elicitation_callback=elicit) as client:
            result = await client.call_tool(
                "refunds", {"message": "Refund me 5"}, progress_callback=progress
            )
        async with get_client(url=first) as protocol:
            runs = await protocol.runs.list(result.meta["thread_id"])
        return _sdk.wire(result), list(runs)

    result, runs = asyncio.run(scenario())
    assert not result.get("isError"), result
    assert result["content"][0]["text"] == "Refunded: refunded 5."
    assert len(elicit.asked) == 1 and '"refund"' in elicit.asked[0]
    assert [r["status"] for r in runs] == ["success", "success"]
    assert "step model" in notes  # progress read from the run's log, which the worker writes


def test_a_task_started_through_one_server_is_answered_through_the_other(
    servers: Fleet,
) -> None:
    (_, first), (_, second) = servers.servers

    async def scenario() -> tuple[Any, dict[str, Any], dict[str, Any]]:
        async with modern(first, None, extensions=[Tasks()]) as one:
            handle = await one.session.call_tool(
                "refunds", {"message": "Refund me 5"}, allow_claimed=True
            )
        async with modern(second, None, extensions=[Tasks()]) as other:
            asked = await until(other.session, handle.task_id, "input_required")
            reply = {"action": "accept", "content": {"answer": APPROVED}}
            await update(
                other.session, handle.task_id, dict.fromkeys(asked["inputRequests"], reply)
            )
            await until(other.session, handle.task_id)
        async with modern(first, None, extensions=[Tasks()]) as one:
            return handle, asked, await get(one.session, handle.task_id)

    handle, asked, done = asyncio.run(scenario())
    assert handle.result_type == "task"
    assert asked["status"] == "input_required"
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "Refunded: refunded 5."


def test_a_task_waiting_for_a_person_is_cancelled_through_the_other_server(
    servers: Fleet,
) -> None:
    from langgraph_sdk import get_client

    from .mcp_tasks_kit import cancel

    (_, first), (_, second) = servers.servers

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with modern(first, None, extensions=[Tasks()]) as one:
            handle = await one.session.call_tool(
                "refunds", {"message": "Refund me 5"}, allow_claimed=True
            )
            await until(one.session, handle.task_id, "input_required")
        async with modern(second, None, extensions=[Tasks()]) as other:
            await cancel(other.session, handle.task_id)
        async with modern(first, None, extensions=[Tasks()]) as one:
            ended = await get(one.session, handle.task_id)
        async with get_client(url=first) as protocol:
            run = await protocol.runs.get(ended["_meta"]["thread_id"], handle.task_id)
        return ended, dict(run)

    ended, run = asyncio.run(scenario())
    assert ended["status"] == "cancelled"
    assert ended["statusMessage"] == "cancelled while it waited for a person"
    assert run["status"] == "interrupted"  # the Agent Protocol's cancelled
