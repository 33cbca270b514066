"""Cancelling an async run while a sync tool runs in a worker thread: the thread cannot be
stopped, so its result is kept when it finishes, and resuming never runs the tool again."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall, tool


def make_agent(ran: list[str], started: threading.Event) -> ReactAgent:
    @tool
    def pay(amount: int) -> str:
        """Pays, slowly: a sync tool, so async runs call it in a worker thread."""
        started.set()
        time.sleep(0.05)
        ran.append(f"paid {amount}")
        return f"paid {amount}"

    asks = AssistantMessage(
        "", tool_calls=(ToolCall(id="c1", name="pay", arguments=json.dumps({"amount": 5})),)
    )
    return ReactAgent(name="a", model=ScriptedChatModel([asks, "Done."]), tools=[pay])


@pytest.mark.parametrize("round_", range(12))
def test_a_cancelled_run_never_runs_the_finished_sync_tool_again(round_: int) -> None:
    ran: list[str] = []
    started = threading.Event()
    agent = make_agent(ran, started)
    config = {"thread_id": f"t{round_}"}

    async def scenario() -> str:
        task = asyncio.ensure_future(agent.acall("pay 5", config))
        while not started.is_set():
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.001 * round_)  # cancel at a different moment each round
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        answer = await agent.acall(None, config)  # resume the stopped run
        return answer.text

    assert asyncio.run(scenario()) == "Done."
    assert ran == ["paid 5"]  # once, however the cancel fell
