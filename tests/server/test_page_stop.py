"""The page's Stop button, in headless Chromium against a real uvicorn (page_kit.py): shown
while a run streams, it cancels the run at once (its model call too), and what was streamed
stays, on screen and in the thread: the partial answer kept as a cut message, the run's card
saying it was cancelled, after a reload too; the conversation goes on after it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from checkpoint import MemorySaver
from graph_agent import AssistantMessage, ChatResponse, Prompt, ReactAgent
from graph_agent.server import create_app

from .conftest import live_server
from .gate_kit import StreamingOnlyModel
from .page_kit import browser_fixture, page_fixture, say, screenshot  # noqa: F401

STARTED = "Once upon a time, a graph"


class HeldModel(StreamingOnlyModel):
    """Its first answer streams a first piece, then holds the rest until its call is
    cancelled (only a Stop ends it); its next answer streams at once."""

    def __init__(self) -> None:
        self.calls = 0
        self.cancelled = threading.Event()

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        self.calls += 1
        if self.calls > 1:
            yield ChatResponse.of(AssistantMessage("The short version: it ran."))
            return
        yield ChatResponse.of(AssistantMessage(STARTED))
        try:
            await asyncio.Event().wait()  # never set
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        yield ChatResponse.of(AssistantMessage(" that never ends."))


def test_stop_cancels_the_run_at_once_and_keeps_what_was_streamed(
    page: Any, tmp_path: Path
) -> None:
    model = HeldModel()
    agent = ReactAgent(name="storyteller", model=model, saver=MemorySaver())
    with live_server(create_app({"storyteller": agent})) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=true]")
        stop = page.locator("#stop")
        assert stop.is_hidden()  # no run, no Stop
        say(page, "Tell me a long story")
        page.locator(".msg.streaming", has_text=STARTED).wait_for()
        stop.wait_for(state="visible")
        page.wait_for_selector("#stop:not([disabled])")
        screenshot(page, tmp_path, "page-stop-streaming")

        stop.click()
        # cancelled at once: the model, which never ends by itself, was stopped
        cut = page.locator("#messages .msg.assistant.cut", has_text=STARTED)
        cut.wait_for()
        assert model.cancelled.is_set()
        assert page.locator("#messages .msg.streaming").count() == 0
        assert "stopped" in cut.inner_text()
        page.wait_for_selector("#timeline .run .pill.cancelled")
        stop.wait_for(state="hidden")
        page.wait_for_selector("#send:not([disabled])")
        assert page.locator("#notice").is_hidden()  # a Stop is no failure
        screenshot(page, tmp_path, "page-stopped")

        # it is in the thread: a reload reads it back, and the run's card says cancelled
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        cut.wait_for()
        page.wait_for_selector("#timeline .run .pill.cancelled")

        say(page, "Shorter, please")
        page.locator(".msg.assistant", has_text="The short version: it ran.").wait_for()
        page.wait_for_selector("#timeline .run:nth-child(2) .pill.done")
        said = page.locator("#messages .msg .text").all_inner_texts()
        assert said == [
            "Tell me a long story",
            STARTED,
            "Shorter, please",
            "The short version: it ran.",
        ]
        assert page.errors == []
