"""A cancel stops a run at once wherever it lands: also while the server keeps the run's
events (a slow store: another server's cancel arrives at any moment), not only while the
run waits for its next event. Closing the run's stream there would let the run finish the
step it is in (its tool) first."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Sequence

import httpx

from checkpoint import MemorySaver
from graph_agent import (
    AssistantMessage,
    FunctionChatModel,
    Prompt,
    ReactAgent,
    ToolCall,
    UserMessage,
    tool,
)
from graph_agent.runs import Entry, MemoryRunStore, RunService
from graph_agent.server import Server, create_app

from .conftest import live_server

HELD = 20.0  # how long the tool holds unless its run is stopped (the test fails by then)


class HeldStore(MemoryRunStore):
    """Keeps a run's events as the memory store does, but, once ``entered`` is set, holds
    the next write until it is cancelled (``holding`` set meanwhile)."""

    def __init__(self, entered: threading.Event) -> None:
        super().__init__()
        self.entered = entered
        self.holding = threading.Event()

    async def append_events(self, run_id: str, entries: Sequence[Entry]) -> None:
        if self.entered.is_set() and not self.holding.is_set():
            self.holding.set()
            await asyncio.Event().wait()  # until the run is cancelled
        await super().append_events(run_id, entries)


def test_a_cancel_landing_while_the_run_s_events_are_kept_stops_its_tool_at_once() -> None:
    entered, release = threading.Event(), threading.Event()

    @tool
    async def hold(note: str) -> str:
        """Holds until the test lets it go."""
        entered.set()
        await asyncio.to_thread(release.wait, HELD)
        return f"held {note}"

    def reply(prompt: Prompt) -> AssistantMessage:
        if isinstance(prompt.messages[-1], UserMessage):
            call = ToolCall(id="call_1", name="hold", arguments=json.dumps({"note": "x"}))
            return AssistantMessage("", tool_calls=[call])
        return AssistantMessage("done")

    agent = ReactAgent(
        name="held", model=FunctionChatModel(reply), tools=[hold], saver=MemorySaver()
    )
    store = HeldStore(entered)
    app = create_app({"held": agent}, runs=RunService(store, **Server.run_options()))
    try:
        with live_server(app) as url, httpx.Client(base_url=url, timeout=HELD * 2) as http:
            thread = http.post("/threads", json={}).json()["thread_id"]
            body = {
                "assistant_id": "held",
                "input": {"messages": [{"role": "user", "content": "go"}]},
            }
            run = http.post(f"/threads/{thread}/runs", json=body).json()
            assert store.holding.wait(HELD)  # the tool holds, and so does a write of its log
            began = time.monotonic()
            http.post(f"/threads/{thread}/runs/{run['run_id']}/cancel?wait=1")
            took = time.monotonic() - began
            status = http.get(f"/threads/{thread}/runs/{run['run_id']}").json()["status"]
            messages = http.get(f"/threads/{thread}/state").json()["values"]["messages"]
            release.set()  # (the server's loop ends once the tool's thread is done)
    finally:
        release.set()
    assert took < HELD / 2
    assert status == "interrupted"
    assert [m["type"] for m in messages] == ["human", "ai", "tool"]
    assert messages[-1]["content"].startswith("Cancelled")
