"""A served agent with ``PIIHook``s: what its clients read (every stream mode, the thread's
history) never holds the data the hooks remove."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")
from langgraph_sdk import get_sync_client

from checkpoint import MemorySaver
from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall, tool
from graph_agent.server import create_app
from hooks import PIIHook
from tests.server.conftest import live_server

SECRETS = ("ada@example.com", "bob@example.org", "4111 1111 1111 1111", "1111 1111 1111")


@tool
def customer(name: str) -> str:
    """The customer's record."""
    return f"{name}: ada@example.com, card 4111 1111 1111 1111"


def test_the_served_stream_and_history_never_carry_it() -> None:
    both = {"apply_to_output": True, "apply_to_tool_results": True}
    pii = [PIIHook("email", **both), PIIHook("credit_card", "mask", **both)]  # type: ignore[arg-type]
    asks = AssistantMessage(
        "", tool_calls=[ToolCall(id="c1", name="customer", arguments='{"name": "Ada"}')]
    )
    model = ScriptedChatModel([asks, "Ada: ada@example.com, 4111 1111 1111 1111."])
    agent = ReactAgent(
        name="support",
        model=model,
        tools=[customer],
        hooks=pii,
        interceptors=pii,
        saver=MemorySaver(),
    )
    modes = ["values", "messages", "updates", "run_events", "debug"]
    with live_server(create_app({"support": agent})) as url, get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        said = {"messages": [{"role": "user", "content": "I am bob@example.org"}]}
        parts = list(client.runs.stream(thread, "support", input=said, stream_mode=modes))
        history = client.threads.get_history(thread)
    streamed = repr([(p.event, p.data) for p in parts])
    assert "[REDACTED_EMAIL]" in streamed and "**** **** **** 1111" in streamed
    assert [s for s in SECRETS if s in streamed] == []
    assert [s for s in SECRETS if s in repr(history)] == []
