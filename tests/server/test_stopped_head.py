"""A thread a stopped run left with steps still to run is not a breakpoint: its head's next
tasks carry the run's error (``{"error", "message"}`` JSON), as LangGraph's server shows a
cancelled or failed task, in ``GET /threads/{id}/state`` and in the head of its history. A
client that reads ``next`` without an interrupt or an error as a pause (``useStream``,
agent-chat-ui) then does not offer to continue it. A later checkpoint or run clears it."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from typing import Any

from checkpoint import MemorySaver
from graph_agent import AssistantMessage, ChatResponse, Prompt, ReactAgent
from hooks import HumanInTheLoopHook

from .gate_kit import StreamingOnlyModel, served
from .served_kit import refund

WAIT = 10.0


class HeldOnceModel(StreamingOnlyModel):
    """Its first answer streams a start, then holds until its call is cancelled; later
    answers come whole."""

    def __init__(self) -> None:
        self.streamed = threading.Event()
        self.calls = 0

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        self.calls += 1
        if self.calls > 1:
            yield ChatResponse.of(AssistantMessage("Done."))
            return
        yield ChatResponse.of(AssistantMessage("The answer starts"))
        self.streamed.set()
        await asyncio.Event().wait()  # only the cancel ends this call


def head_tasks(s: Any, thread: str) -> tuple[list[str], list[Any], list[Any]]:
    state = s.http.get(f"/threads/{thread}/state").json()
    history = s.http.post(f"/threads/{thread}/history", json={"limit": 2}).json()
    return (
        state["next"],
        [t["error"] for t in state["tasks"]],
        [t["error"] for t in history[0]["tasks"]],
    )


def test_a_cancelled_runs_thread_shows_its_next_task_cancelled_until_it_moves_on() -> None:
    model = HeldOnceModel()
    agent = ReactAgent(
        name="talker",
        model=model,
        tools=[refund],
        hooks=[HumanInTheLoopHook(interrupt_on=["refund"])],  # a node after the model
        saver=MemorySaver(),
    )
    with served(talker=agent) as s:
        thread = s.thread()
        body = {
            "assistant_id": "talker",
            "input": {"messages": [{"role": "user", "content": "Hi"}]},
        }
        run = s.http.post(f"/threads/{thread}/runs", json=body).json()
        assert model.streamed.wait(WAIT)
        stopped = s.http.post(f"/threads/{thread}/runs/{run['run_id']}/cancel?wait=1", timeout=WAIT)
        assert stopped.status_code == 200, stopped.text
        after_stop = head_tasks(s, thread)
        older = s.http.post(f"/threads/{thread}/history", json={"limit": 3}).json()[1]
        again = s.http.post(f"/threads/{thread}/runs/wait", json=body, timeout=WAIT).json()
        after_run = head_tasks(s, thread)
    next_nodes, state_errors, history_errors = after_stop
    assert next_nodes == ["HumanInTheLoopHook.after_model"]
    (error,) = state_errors
    assert json.loads(error) == {
        "error": "CancelledError",
        "message": "the run was cancelled; what it did is kept",
    }
    assert history_errors == state_errors  # the head of the history is the same state
    assert all(t["error"] is None for t in older["tasks"])  # only the head says so
    assert again["messages"][-1]["content"] == "Done."
    assert after_run == ([], [], [])


def test_a_checkpoint_written_after_the_stop_is_not_marked() -> None:
    model = HeldOnceModel()
    agent = ReactAgent(
        name="talker",
        model=model,
        tools=[refund],
        hooks=[HumanInTheLoopHook(interrupt_on=["refund"])],
        saver=MemorySaver(),
    )
    with served(talker=agent) as s:
        thread = s.thread()
        body = {
            "assistant_id": "talker",
            "input": {"messages": [{"role": "user", "content": "Hi"}]},
        }
        run = s.http.post(f"/threads/{thread}/runs", json=body).json()
        assert model.streamed.wait(WAIT)
        s.http.post(f"/threads/{thread}/runs/{run['run_id']}/cancel?wait=1", timeout=WAIT)
        edited = s.http.post(
            f"/threads/{thread}/state",
            json={"values": {"messages": [{"role": "user", "content": "Also this"}]}},
        )
        assert edited.status_code == 200, edited.text
        next_nodes, state_errors, _ = head_tasks(s, thread)
    assert next_nodes == ["HumanInTheLoopHook.after_model"]  # where it stood, unchanged
    assert state_errors == [None]  # but the edit is newer than the stop: a plain pause
