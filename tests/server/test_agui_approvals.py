"""A ``HumanInTheLoopHook`` approval over AG-UI, as the spec's interrupts page has it: an
interrupt with reason ``tool_call``, the call's id and a ``responseSchema`` (AG-UI's
approval shape, ``editedArgs`` only where the tool allows an edit), answered by
``{"approved": bool, "editedArgs"?, "reason"?}`` (our own ``{"decision": ...}`` still works:
test_agui.py); a payload that does not fit is a 422 saying the shape."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from checkpoint import MemorySaver
from graph_agent import ReactAgent, ScriptedChatModel
from graph_agent.server import create_app
from hooks import HumanInTheLoopHook

from .conftest import live_server
from .served_kit import refund
from .test_agui import EventType, ag_ui, asks, run_input, user


def refunds(name: str, allowed: list[str] | None = None) -> ReactAgent:
    setting: Any = {"allowed_decisions": allowed} if allowed else True
    return ReactAgent(
        name=name,
        model=ScriptedChatModel([asks("refund", {"amount": 5}), "Done."]),
        tools=[refund],
        hooks=[HumanInTheLoopHook({"refund": setting})],
        saver=MemorySaver(),
    )


@pytest.fixture
def url() -> Iterator[str]:
    agents = {"refunds": refunds("refunds"), "strict": refunds("strict", ["approve", "reject"])}
    with live_server(create_app(agents)) as base:
        yield base


def paused(url: str, assistant: str = "refunds") -> tuple[str, Any]:
    thread = str(uuid.uuid4())
    events = ag_ui(url, assistant, run_input(thread, [user("refund 5")]))
    (pause,) = events[-1].outcome.interrupts
    return thread, pause


def answer(url: str, thread: str, pause: Any, payload: Any) -> list[Any]:
    entry = {"interruptId": pause.id, "status": "resolved", "payload": payload}
    return ag_ui(url, "refunds", run_input(thread, [], resume=[entry]))


def result_of(events: list[Any]) -> str:
    return next(e.content for e in events if e.type == EventType.TOOL_CALL_RESULT)


def test_the_interrupt_is_a_tool_call_with_the_approval_schema(url: str) -> None:
    _, pause = paused(url)
    assert (pause.reason, pause.tool_call_id) == ("tool_call", "call_1")
    assert pause.response_schema["required"] == ["approved"]
    assert set(pause.response_schema["properties"]) == {"approved", "editedArgs", "reason"}
    _, strict = paused(url, "strict")  # no edit allowed: no editedArgs, the signal for edits
    assert set(strict.response_schema["properties"]) == {"approved", "reason"}


@pytest.mark.parametrize(
    ("payload", "result"),
    [
        ({"approved": True}, "refunded 5"),
        ({"approved": True, "editedArgs": {"amount": 3}}, "refunded 3"),
        ({"approved": False, "reason": "too much"}, "The user rejected this tool call: too much"),
    ],
)
def test_the_approval_shape_approves_edits_and_rejects(
    url: str, payload: dict[str, Any], result: str
) -> None:
    thread, pause = paused(url)
    events = answer(url, thread, pause, payload)
    assert result_of(events) == result
    assert events[-1].outcome.type == "success"


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        ({"approved": "yes"}, "; approved is 'yes'"),
        ({"approved": True, "why": "x"}, ", not with ['why']"),
        ({"approved": False, "editedArgs": {"amount": 3}}, "given with approved: true"),
        ({"approved": False, "reason": 3}, "reason is text, not 3"),
    ],
)
def test_an_approval_payload_that_does_not_fit_is_a_422(
    url: str, payload: dict[str, Any], words: str
) -> None:
    thread, pause = paused(url)
    entry = {"interruptId": pause.id, "status": "resolved", "payload": payload}
    body = run_input(thread, [], resume=[entry])
    response = httpx.post(f"{url}/ag-ui/refunds", json=body, timeout=10)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert detail.startswith(f"resume entry {pause.id!r}: ") and words in detail
