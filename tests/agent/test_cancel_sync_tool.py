"""Cancelling an async run while a sync tool runs in a worker thread: the thread cannot be
stopped, so its result is kept when it finishes, and resuming never runs the tool again."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from checkpoint import SqliteSaver
from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall, tool


def make_agent(ran: list[str], started: threading.Event, cancelled: threading.Event) -> ReactAgent:
    @tool
    def pay(amount: int) -> str:
        """Pays until the run is cancelled: a sync tool, so async runs call it in a worker
        thread, and the cancel lands while it runs."""
        started.set()
        assert cancelled.wait(10)
        ran.append(f"paid {amount}")
        return f"paid {amount}"

    asks = AssistantMessage(
        "", tool_calls=(ToolCall(id="c1", name="pay", arguments=json.dumps({"amount": 5})),)
    )
    return ReactAgent(name="a", model=ScriptedChatModel([asks, "Done."]), tools=[pay])


@pytest.mark.parametrize("round_", range(12))
def test_a_cancelled_run_never_runs_the_finished_sync_tool_again(round_: int) -> None:
    ran: list[str] = []
    started, cancelled = threading.Event(), threading.Event()
    agent = make_agent(ran, started, cancelled)
    config = {"thread_id": f"t{round_}"}

    async def scenario() -> str:
        task = asyncio.ensure_future(agent.acall("pay 5", config))
        while not started.is_set():
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.001 * round_)  # cancel at a different moment each round
        task.cancel()
        cancelled.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        answer = await agent.acall(None, config)  # resume the stopped run
        return answer.text

    assert asyncio.run(scenario()) == "Done."
    assert ran == ["paid 5"]  # once, however the cancel fell


def _kinds(messages: Any) -> list[str]:
    return [type(m).__name__ for m in messages]


@pytest.mark.parametrize("saver", ["memory", "sqlite"])
@pytest.mark.parametrize("then", ["resume", "new input"])
def test_a_sync_tool_that_finished_after_the_cancel_has_its_result_in_the_thread(
    saver: str, then: str, tmp_path: Any
) -> None:
    """docs/errors.md: the tool finishes in its thread, its result is kept and stored; the
    next run puts it in the history and the model is sent it (never a call left unanswered,
    never "not run")."""
    release = threading.Event()
    started = threading.Event()
    ran: list[str] = []

    @tool
    def pay(amount: int) -> str:
        """Pays: a sync tool that waits to be let go, so the cancel lands while it runs."""
        started.set()
        release.wait(10)
        ran.append(f"paid {amount}")
        return f"paid {amount}"

    asks = AssistantMessage(
        "", tool_calls=(ToolCall(id="c1", name="pay", arguments=json.dumps({"amount": 5})),)
    )
    model = ScriptedChatModel([asks, "Done.", "Hello again."])
    options: dict[str, Any] = {}
    if saver == "sqlite":
        options["saver"] = SqliteSaver(tmp_path / "t.sqlite")
    agent = ReactAgent(name="a", model=model, tools=[pay], **options)
    config = {"thread_id": "t"}

    async def scenario() -> None:
        task = asyncio.ensure_future(agent.acall("pay 5", config))
        while not started.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        release.set()  # the thread runs on to its end; the cancel waits for it
        with pytest.raises(asyncio.CancelledError):
            await task
        await agent.acall(None if then == "resume" else "hello", config)

    try:
        asyncio.run(scenario())
    finally:
        if saver == "sqlite":
            options["saver"].close()
    assert ran == ["paid 5"]
    prompts = model.prompts
    sent = prompts[-1].messages
    assert "ToolResponseMessage" in _kinds(sent), _kinds(sent)
    answered = [m for m in sent if type(m).__name__ == "ToolResponseMessage"]
    assert [m.text for m in answered] == ["paid 5"]
