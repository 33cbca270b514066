"""The page's Stop button, in headless Chromium against a real uvicorn (page_kit.py): shown
while a run streams, it cancels the run at once (its model call too), and what was streamed
stays, on screen and in the thread: the partial answer kept as a cut message, the run's card
saying it was cancelled, after a reload too; the conversation goes on after it. A run joined
after a reload is stopped as well, and a Stop pressed before the run has its id is sent once
the id comes."""

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


def test_a_run_joined_after_a_reload_is_stopped_too(page: Any, tmp_path: Path) -> None:
    """The page reloaded mid-answer joins the run going on (its kept events replayed): Stop
    is shown for it and cancels it."""
    model = HeldModel()
    agent = ReactAgent(name="storyteller", model=model, saver=MemorySaver())
    with live_server(create_app({"storyteller": agent})) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=true]")
        say(page, "Tell me a long story")
        page.locator(".msg.streaming", has_text=STARTED).wait_for()
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        page.locator(".msg.streaming", has_text=STARTED).wait_for()
        page.locator("#stop").click()
        page.locator("#messages .msg.assistant.cut", has_text=STARTED).wait_for()
        page.wait_for_selector("#timeline .run .pill.cancelled")
        page.locator("#stop").wait_for(state="hidden")
        assert model.cancelled.is_set()
        assert page.errors == []


def test_stop_pressed_before_the_run_has_its_id_cancels_it_when_the_id_comes(
    page: Any, tmp_path: Path
) -> None:
    """The request that starts the run is held in the browser until Stop was pressed: the
    page sends the cancel once the stream names the run."""
    model = HeldModel()
    agent = ReactAgent(name="storyteller", model=model, saver=MemorySaver())
    with live_server(create_app({"storyteller": agent})) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=true]")
        cancels: list[str] = []
        page.on("request", lambda r: "/cancel" in r.url and cancels.append(r.url))
        before: list[Any] = []

        def stop_first(route: Any) -> None:
            page.locator("#stop").click()
            # the run is not started yet: nothing to cancel, and Stop waits for its id
            before.append((page.locator("#stop").is_disabled(), list(cancels)))
            route.continue_()

        page.route("**/threads/*/runs/stream", stop_first)
        say(page, "Tell me a long story")
        page.wait_for_selector("#timeline .run .pill.cancelled")
        page.locator("#stop").wait_for(state="hidden")
        assert before == [(True, [])]
        assert len(cancels) == 1 and "action=interrupt" in cancels[0]
        assert page.locator("#notice").is_hidden()
        assert page.errors == []
