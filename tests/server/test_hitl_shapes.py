"""A HumanInTheLoopHook pause over HTTP in LangChain's shape: the interrupt is a
``HITLRequest`` agent-chat-ui shows, ``Command(resume={"decisions": [...]})`` from
``langgraph-sdk`` answers it, and an answer in a wrong shape is a 422 saying the shapes
expected (no run, nothing logged with a traceback; the thread stays paused)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import UnprocessableEntityError

from checkpoint import MemorySaver
from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall, tool
from graph_agent.server import create_app
from hooks import HumanInTheLoopHook

from .conftest import live_server


@tool
def refund(amount: int) -> str:
    """Refund an amount."""
    return f"refunded {amount}"


@tool
def close_account(reason: str) -> str:
    """Close the account."""
    return "closed"


def asks(*calls: tuple[str, str, dict[str, Any]]) -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=[ToolCall(id=i, name=n, arguments=json.dumps(a)) for i, n, a in calls]
    )


REFUND = ("call_r", "refund", {"amount": 5})
CLOSE = ("call_c", "close_account", {"reason": "moving"})


def bank() -> ReactAgent:
    model = ScriptedChatModel([asks(REFUND, CLOSE), "Done."] * 10)
    hook = HumanInTheLoopHook(
        {"refund": True, "close_account": {"allowed_decisions": ["approve", "reject"]}}
    )
    return ReactAgent(
        name="bank", model=model, tools=[refund, close_account], hooks=[hook], saver=MemorySaver()
    )


@pytest.fixture
def url() -> Iterator[str]:
    with live_server(create_app({"bank": bank()})) as base:
        yield base


USER: dict[str, Any] = {"messages": [{"role": "user", "content": "refund 5 and close"}]}


def agent_chat_ui_shows_approval(interrupt: Any) -> bool:
    """What agent-chat-ui (src/lib/agent-inbox-interrupt.ts) checks before it shows its
    approval UI for an interrupt: a value with non-empty ``action_requests`` (each a name and
    an object of args) and ``review_configs`` (each an action name and a list of decisions)."""
    value = interrupt.get("value") if isinstance(interrupt, dict) else None
    if not isinstance(value, dict):
        return False
    requests, configs = value.get("action_requests"), value.get("review_configs")
    if not (isinstance(requests, list) and requests and isinstance(configs, list) and configs):
        return False
    return all(
        isinstance(r, dict) and isinstance(r.get("name"), str) and isinstance(r.get("args"), dict)
        for r in requests
    ) and all(
        isinstance(c, dict)
        and isinstance(c.get("action_name"), str)
        and isinstance(c.get("allowed_decisions"), list)
        for c in configs
    )


def tool_answers(values: dict[str, Any]) -> list[str]:
    return [m["content"] for m in values["messages"] if m["type"] == "tool"]


def test_the_pause_is_a_hitl_request_and_decisions_answer_it(url: str) -> None:
    with get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        paused = client.runs.wait(thread, "bank", input=USER)
        assert isinstance(paused, dict)
        (interrupt,) = paused["__interrupt__"]
        assert agent_chat_ui_shows_approval(interrupt)
        value = interrupt["value"]
        assert [(r["name"], r["args"]) for r in value["action_requests"]] == [
            ("refund", {"amount": 5}),
            ("close_account", {"reason": "moving"}),
        ]
        assert value["review_configs"] == [
            {
                "action_name": "refund",
                "allowed_decisions": ["approve", "edit", "reject", "respond"],
            },
            {"action_name": "close_account", "allowed_decisions": ["approve", "reject"]},
        ]
        assert [c["id"] for c in value["tool_calls"]] == ["call_r", "call_c"]  # ours, as before
        (state_interrupt,) = client.threads.get_state(thread)["interrupts"]
        assert agent_chat_ui_shows_approval(state_interrupt)
        decisions = [
            {"type": "edit", "edited_action": {"name": "refund", "args": {"amount": 2}}},
            {"type": "reject", "message": "keep it open"},
        ]
        done = client.runs.wait(thread, "bank", command={"resume": {"decisions": decisions}})
        assert isinstance(done, dict) and "__interrupt__" not in done
        assert tool_answers(done) == [
            "refunded 2",
            "The user rejected this tool call: keep it open",
        ]
        assert done["messages"][-1]["content"] == "Done."


def test_the_async_client_streams_a_resume_in_langchain_s_shape(url: str) -> None:
    async def main() -> list[Any]:
        client = get_client(url=url)
        try:
            thread = (await client.threads.create())["thread_id"]
            await client.runs.wait(thread, "bank", input=USER)
            answer = {
                "decisions": [{"type": "respond", "message": "ask later"}, {"type": "approve"}]
            }
            parts = [
                p
                async for p in client.runs.stream(
                    thread, "bank", command={"resume": answer}, stream_mode="values"
                )
            ]
            return [p.data for p in parts if p.event == "values"]
        finally:
            await client.http.client.aclose()

    values = asyncio.run(main())
    assert tool_answers(values[-1]) == ["The user rejected this tool call: ask later", "closed"]


WRONG = [
    ({"decisions": [{"type": "approve"}]}, "1 decision(s) for 2 pending tool call(s)"),
    (
        {"decisions": [{"type": "approve"}, {"type": "edit", "edited_action": {"args": {}}}]},
        "decisions[1] (for close_account call_c) is 'edit', which tool 'close_account' does "
        "not allow; allowed: ['approve', 'reject']",
    ),
    ({"decisions": [{"type": "accept", "args": None}] * 2}, "must be a dict whose 'type' is"),
    ({"tool_call_id": "call_r", "decision": "maybe"}, "decision must be one of"),
    ("yes", "cannot use 'yes' as tool feedback"),
]


@pytest.mark.parametrize(("answer", "says"), WRONG)
def test_an_answer_in_a_wrong_shape_is_a_422_that_says_the_shapes(
    url: str, answer: Any, says: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="graph_agent")
    with get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        client.runs.wait(thread, "bank", input=USER)
        with pytest.raises(httpx.HTTPStatusError) as waited:  # runs.wait raises it plain
            client.runs.wait(thread, "bank", command={"resume": answer})
        assert waited.value.response.status_code == 422
        with pytest.raises(UnprocessableEntityError):
            client.runs.create(thread, "bank", command={"resume": answer})
        reply = httpx.post(
            f"{url}/threads/{thread}/runs/stream",
            json={"assistant_id": "bank", "command": {"resume": answer}},
        )
        assert reply.status_code == 422
        detail = reply.json()["detail"]
        assert detail.startswith("command.resume does not answer the approval ")
        assert says in detail
        assert """LangChain's shape: {"decisions": [one per action request, in their order]}""" in (
            detail
        )
        assert len(client.runs.list(thread)) == 1  # the first run only: no run was started
        (pending,) = client.threads.get_state(thread)["interrupts"]
        approve = {"decisions": [{"type": "approve"}, {"type": "approve"}]}
        done = client.runs.wait(thread, "bank", command={"resume": {pending["id"]: approve}})
        assert isinstance(done, dict)
        assert tool_answers(done) == ["refunded 5", "closed"]
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


def test_an_answer_addressed_by_interrupt_id_is_checked_too(url: str) -> None:
    with get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        client.runs.wait(thread, "bank", input=USER)
        (pending,) = client.threads.get_state(thread)["interrupts"]
        wrong: dict[str, Any] = {pending["id"]: {"decisions": []}}
        with pytest.raises(UnprocessableEntityError) as caught:
            client.runs.create(thread, "bank", command={"resume": wrong})
        assert "0 decision(s) for 2 pending tool call(s)" in str(caught.value.body)
        ours = [
            {"tool_call_id": "call_r", "decision": "approved"},
            {"tool_call_id": "call_c", "decision": "rejected", "reason": "no"},
        ]
        done = client.runs.wait(thread, "bank", command={"resume": ours})
        assert isinstance(done, dict)
        assert tool_answers(done) == ["refunded 5", "The user rejected this tool call: no"]
