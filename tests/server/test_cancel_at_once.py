"""A served run cancelled during a slow model call stops at once (the model call itself is
cancelled), and the thread keeps the part of the answer the client saw streamed, marked cut
(``response_metadata.cut``): issue 38's "cancel at once, and lose nothing the user saw"."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

from checkpoint import MemorySaver
from graph_agent import AssistantMessage, ChatResponse, Prompt, ReactAgent

from .gate_kit import StreamingOnlyModel, served

WAIT = 10.0  # seconds: a cancel that waits for the model call fails here


class HeldModel(StreamingOnlyModel):
    """Streams the start of its answer, then holds the rest until its call is cancelled."""

    def __init__(self) -> None:
        self.streamed = threading.Event()
        self.cancelled = threading.Event()

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        yield ChatResponse.of(AssistantMessage("The answer starts"))
        self.streamed.set()
        try:
            await asyncio.Event().wait()  # never set: only the cancel ends the call
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        yield ChatResponse.of(AssistantMessage(" and never ends."))


def test_a_cancelled_run_stops_its_model_at_once_and_keeps_the_streamed_part() -> None:
    model = HeldModel()
    agent = ReactAgent(name="talker", model=model, saver=MemorySaver())
    with served(talker=agent) as s:
        thread = s.thread()
        body = {
            "assistant_id": "talker",
            "input": {"messages": [{"role": "user", "content": "Tell me"}]},
            "stream_mode": ["messages-tuple", "values"],
        }
        run = s.http.post(f"/threads/{thread}/runs", json=body).json()
        assert model.streamed.wait(WAIT)
        stopped = s.http.post(
            f"/threads/{thread}/runs/{run['run_id']}/cancel?wait=1", timeout=WAIT
        )  # answered once the run stopped: at once, not when the model would have ended
        assert stopped.status_code == 200, stopped.text
        assert model.cancelled.is_set()  # the model call itself was stopped
        assert s.run(thread, run["run_id"])["status"] == "interrupted"
        events = s.events(thread, run["run_id"])
        state = s.http.get(f"/threads/{thread}/state").json()
    seen = "".join(
        data[0]["content"]
        for _, event, data in events
        if event == "messages" and data[0]["type"] == "AIMessageChunk"
    )
    assert seen == "The answer starts"
    messages = state["values"]["messages"]
    assert [m["type"] for m in messages] == ["human", "ai"]
    assert messages[-1]["content"] == seen  # what the client saw is stored
    assert messages[-1]["response_metadata"]["cut"] is True
    assert [m["content"] for m in stopped.json()["messages"]] == ["Tell me", seen]
