"""A resume entry with status ``cancelled`` (AG-UI 1.0: the person abandoned the request
without an answer) over a real uvicorn: the thread goes on with the request declined, as the
paused code understands it: an approval rejects its calls, a front-end tool's call did not
run, any other ``interrupt()`` gets ``{"type": "cancelled", ...}`` (``is_cancelled``)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from checkpoint import MemorySaver
from graph_agent import (
    END,
    START,
    AssistantMessage,
    ReactAgent,
    ScriptedChatModel,
    StateGraph,
    tool,
)
from graph_agent import ToolCall as Call
from graph_agent.graph import interrupt
from graph_agent.server import ClientTools, create_app, is_cancelled

from .conftest import live_server
from .test_agui import EventType, ag_ui, run_input, served, text_of, user


def cancel(pause: Any, **more: Any) -> dict[str, Any]:
    return {"interruptId": pause.id, "status": "cancelled", **more}


def test_a_cancelled_approval_rejects_the_call_and_the_agent_goes_on() -> None:
    thread = str(uuid.uuid4())
    with live_server(create_app(served())) as url:
        first = ag_ui(url, "refunds", run_input(thread, [user("refund 5", "u1")]))
        (pause,) = first[-1].outcome.interrupts
        second = ag_ui(url, "refunds", run_input(thread, [], resume=[cancel(pause)]))
    result = next(e for e in second if e.type == EventType.TOOL_CALL_RESULT)
    assert result.tool_call_id == "call_1"
    assert result.content == "The user rejected this tool call: cancelled without an answer"
    assert text_of(second) == "Refunded 5."  # the scripted model's next answer
    assert second[-1].outcome.type == "success"


def asker() -> Any:
    def ask(state: dict[str, Any]) -> dict[str, Any]:
        answer = interrupt("Which city?")
        if is_cancelled(answer):
            return {"city": "none", "why": answer.get("metadata", {}).get("why")}
        return {"city": answer}

    graph = StateGraph()
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph.compile(saver=MemorySaver())


def test_a_cancelled_question_is_an_answer_the_node_recognises() -> None:
    thread = str(uuid.uuid4())
    with live_server(create_app({"asker": asker()})) as url:
        first = ag_ui(url, "asker", run_input(thread, [user("go")]))
        (pause,) = first[-1].outcome.interrupts
        assert (pause.reason, pause.message) == ("input_required", "Which city?")
        entry = cancel(pause, metadata={"why": "closed the dialog"})
        second = ag_ui(url, "asker", run_input(thread, [], resume=[entry]))
        state = httpx.get(f"{url}/threads/{thread}/state", timeout=10).json()["values"]
    assert second[-1].outcome.type == "success"
    assert (state["city"], state["why"]) == ("none", "closed the dialog")


@tool
def ask_person(question: str) -> str:
    """Ask the person a question."""
    answer = interrupt(question)
    return "no answer" if is_cancelled(answer) else str(answer)


def test_cancelled_entries_decline_a_question_and_a_front_end_call_side_by_side() -> None:
    both = AssistantMessage(
        "",
        tool_calls=[
            Call(id="call_q", name="ask_person", arguments='{"question": "Which colour?"}'),
            Call(id="call_bg", name="change_background", arguments='{"color": "blue"}'),
        ],
    )
    agent = ReactAgent(
        name="ui",
        model=ScriptedChatModel([both, "Left as it was."]),
        tools=[ask_person],
        tool_providers=[ClientTools()],
        saver=MemorySaver(),
    )
    tool_ = {"name": "change_background", "description": "Change the page's colour."}
    thread = str(uuid.uuid4())
    with live_server(create_app({"ui": agent})) as url:
        first = ag_ui(url, "ui", run_input(thread, [user("paint it")], tools=[tool_]))
        pauses = first[-1].outcome.interrupts
        assert sorted(p.reason for p in pauses) == ["graph_agent:client_tool", "input_required"]
        body = run_input(thread, [], tools=[tool_], resume=[cancel(p) for p in pauses])
        second = ag_ui(url, "ui", body)
    results = {e.tool_call_id: e.content for e in second if e.type == EventType.TOOL_CALL_RESULT}
    assert results == {"call_q": "no answer"}  # the front-end call's result is the client's
    snapshot = next(e for e in second if e.type == EventType.MESSAGES_SNAPSHOT).messages
    tools = {m.tool_call_id: m.content for m in snapshot if m.role == "tool"}
    assert tools == {
        "call_q": "no answer",
        "call_bg": "The user cancelled this call without an answer; it did not run.",
    }
    assert text_of(second) == "Left as it was."
    assert second[-1].outcome.type == "success"


def test_a_cancelled_entry_with_a_payload_is_a_422() -> None:
    thread = str(uuid.uuid4())
    with live_server(create_app(served())) as url:
        first = ag_ui(url, "refunds", run_input(thread, [user("refund 5")]))
        (pause,) = first[-1].outcome.interrupts
        body = run_input(thread, [], resume=[cancel(pause, payload={"decision": "approved"})])
        response = httpx.post(f"{url}/ag-ui/refunds", json=body, timeout=10)
        assert response.status_code == 422, response.text
        assert "'cancelled' and carries a payload" in response.json()["detail"]
        # nothing ran: the thread still waits for its answer
        again = httpx.get(f"{url}/threads/{thread}/state", timeout=10).json()
        assert [i["id"] for i in again["interrupts"]] == [pause.id]


def test_an_approval_that_allows_no_rejection_cannot_be_cancelled() -> None:
    from hooks import HumanInTheLoopHook

    from .served_kit import refund
    from .test_agui import asks

    strict = ReactAgent(
        name="strict",
        model=ScriptedChatModel([asks("refund", {"amount": 5}), "Refunded 5."]),
        tools=[refund],
        hooks=[HumanInTheLoopHook({"refund": {"allowed_decisions": ["approve", "edit"]}})],
        saver=MemorySaver(),
    )
    thread = str(uuid.uuid4())
    with live_server(create_app({"strict": strict})) as url:
        first = ag_ui(url, "strict", run_input(thread, [user("refund 5")]))
        (pause,) = first[-1].outcome.interrupts
        body = run_input(thread, [], resume=[cancel(pause)])
        response = httpx.post(f"{url}/ag-ui/strict", json=body, timeout=10)
    assert response.status_code == 422, response.text
    assert response.json()["detail"] == (
        f"resume entry {pause.id!r} is 'cancelled': cancelling declines the approval, a "
        "rejection of its calls, and tool 'refund' allows none (allowed: ['approve', 'edit']); "
        "answer it with status 'resolved'"
    )
