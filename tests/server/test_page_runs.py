"""Every run on the page at ``/``, whoever started it (headless Chromium against a real
uvicorn, page_kit.py): a run started with langgraph-sdk in ``messages-tuple`` only (as
agent-chat-ui streams) or waited for (no stream at all) shows its whole timeline (nodes, model
calls, tool calls, the sub-agent under the call that ran it); a server restarted on the same
SQLite files lists every thread with its metadata, and their runs' timelines, in a fresh
browser (no local storage); a run the SDK starts while the page shows the thread is found,
followed live (its answer streams into the chat) and finished on the page."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_sync_client

from checkpoint import MemorySaver, SqliteSaver
from graph_agent import (
    AssistantMessage,
    ChatResponse,
    FunctionChatModel,
    Prompt,
    ReactAgent,
    ToolCall,
    UserMessage,
)
from graph_agent.runs import SqliteRunStore
from graph_agent.server import create_app

from .conftest import live_server
from .gate_kit import StreamingOnlyModel
from .page_kit import TIMEOUT, browser_fixture, page_fixture, screenshot  # noqa: F401
from .served_kit import get_weather

THINKING = "Let me ask my researcher"


def asks(name: str, arguments: dict[str, Any], call_id: str) -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=[ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))]
    )


def researcher() -> ReactAgent:
    """Asks ``get_weather`` for the city it is given, then says what it found."""

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, UserMessage):
            return asks("get_weather", {"city": last.text}, "call_w")
        return AssistantMessage(f"Found: {prompt.messages[-1].text}.")

    return ReactAgent(name="researcher", model=FunctionChatModel(reply), tools=[get_weather])


def boss(saver: Any, model: Any = None) -> ReactAgent:
    """Asks its researcher (an agent used as a tool) about the city it is told, then
    answers with what it said."""

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, UserMessage):
            return asks("researcher", {"input": last.text}, "call_b")
        return AssistantMessage(f"Boss says: {last.text}")

    return ReactAgent(
        name="boss",
        model=model or FunctionChatModel(reply),
        tools=[researcher().as_tool()],
        saver=saver,
    )


def said(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def assert_whole_timeline(card: Any, city: str) -> None:
    """A boss run's card: its nodes, its two model calls, the researcher's call with the
    researcher's own model calls and its weather call nested under it."""
    card.locator(".row.tool.has-sub .row.tool", has_text="get_weather").wait_for()
    assert card.locator(".pill").first.inner_text() == "done"
    assert card.locator(":scope > .rows > .row.node").count() == 3  # model, tools, model
    outer = card.locator(".row.tool.has-sub", has_text="researcher")
    assert outer.count() == 1
    inner = outer.locator(".row.tool", has_text="get_weather")
    assert inner.locator("pre.result").inner_text() == f"sunny in {city}"
    assert outer.locator(".row.model").count() == 2  # the researcher's own model calls
    assert card.locator(".row.model").count() == 4


def test_runs_the_sdk_started_in_messages_tuple_or_waited_show_their_whole_timeline(
    page: Any, tmp_path: Path
) -> None:
    with live_server(create_app({"boss": boss(MemorySaver())})) as url:
        with get_sync_client(url=url) as client:
            thread = client.threads.create()["thread_id"]
            parts = list(
                client.runs.stream(thread, "boss", input=said("Rome"), stream_mode="messages-tuple")
            )
            assert {p.event for p in parts} == {"metadata", "messages"}
            client.runs.wait(thread, "boss", input=said("Oslo"))  # nothing streamed
        page.goto(f"{url}/#thread={thread}")
        page.wait_for_selector("body[data-ready=true]")
        cards = page.locator("#timeline .run")
        cards.nth(1).locator(".row.tool.has-sub .row.tool", has_text="get_weather").wait_for()
        assert cards.count() == 2
        assert_whole_timeline(cards.nth(0), "Rome")
        assert_whole_timeline(cards.nth(1), "Oslo")
        # each says how its client started it
        assert cards.locator(".via").all_inner_texts() == ["· messages-tuple", "· waited"]
        assert (
            page.locator("#messages .msg.assistant")
            .all_inner_texts()[-1]
            .endswith("Boss says: Found: sunny in Oslo.")
        )
        screenshot(page, tmp_path, "page-runs-sdk")
        assert page.errors == []


@contextmanager
def served_on(db: Path) -> Iterator[str]:
    """``boss`` served on the SQLite file ``db`` (its threads and its runs' records and
    events); everything closed at the end, as a process that ends."""
    saver = SqliteSaver(db)
    store = SqliteRunStore(db)
    try:
        with live_server(create_app({"boss": boss(saver)}, runs=store)) as url:
            yield url
    finally:
        # (Playwright's sync API runs a loop in this thread: the store closes in another)
        closer = threading.Thread(target=asyncio.run, args=(store.aclose(),))
        closer.start()
        closer.join()
        saver.close()


def test_a_restarted_server_lists_every_thread_and_its_runs_in_a_fresh_browser(
    page: Any, tmp_path: Path
) -> None:
    db = tmp_path / "threads.sqlite"
    with served_on(db) as url, get_sync_client(url=url) as client:
        titled = client.threads.create(metadata={"title": "Trip planning"})["thread_id"]
        client.runs.wait(titled, "boss", input=said("Lima"))
        plain = client.threads.create()["thread_id"]
        list(client.runs.stream(plain, "boss", input=said("Kyiv"), stream_mode="messages-tuple"))
    with served_on(db) as url:
        page.goto(url + "/")  # (a browser context of its own: nothing in its local storage)
        page.wait_for_selector("body[data-ready=true]")
        options = page.locator("#thread optgroup[data-graph=boss] option")
        assert options.count() == 2
        texts = options.all_inner_texts()
        assert texts[0].startswith("Kyiv · idle")  # the last changed first
        assert texts[1].startswith("Trip planning · idle")  # its metadata's title
        assert page.locator("#thread").input_value() == plain
        assert_whole_timeline(page.locator("#timeline .run").first, "Kyiv")
        # (drawn open for the screenshot: a closed select shows only its choice)
        page.evaluate("document.querySelector('#thread').size = 4")
        screenshot(page, tmp_path, "page-runs-restarted")
        page.evaluate("document.querySelector('#thread').removeAttribute('size')")

        page.select_option("#thread", titled)
        page.locator("#timeline .run .row.has-sub .row.tool", has_text="get_weather").wait_for()
        shown = page.locator(f"#thread option[value='{titled}']")
        assert shown.inner_text().startswith("Trip planning · idle")  # read again
        assert_whole_timeline(page.locator("#timeline .run").first, "Lima")
        assert page.locator("#timeline .run").count() == 1
        assert page.errors == []


class HeldBoss(StreamingOnlyModel):
    """The boss's model, streamed: its first answer (asking the researcher) at once; its
    second streams a first piece, then waits for ``release`` before the rest."""

    def __init__(self, release: threading.Event) -> None:
        self.release = release

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        last = prompt.messages[-1]
        if isinstance(last, UserMessage):
            yield ChatResponse.of(asks("researcher", {"input": last.text}, "call_b"))
            return
        yield ChatResponse.of(AssistantMessage(THINKING))
        assert await asyncio.to_thread(self.release.wait, TIMEOUT / 1000), "not released"
        yield ChatResponse.of(AssistantMessage(" and it says: sunny."))


def test_a_run_the_sdk_starts_while_the_page_shows_the_thread_is_followed_live(
    page: Any, tmp_path: Path
) -> None:
    release = threading.Event()
    app = create_app({"boss": boss(MemorySaver(), HeldBoss(release))})
    with live_server(app) as url, get_sync_client(url=url) as client:
        thread = client.threads.create(metadata={"graph_id": "boss"})["thread_id"]
        page.goto(f"{url}/#thread={thread}")
        page.wait_for_selector("body[data-ready=true]")
        assert page.locator("#timeline .run").count() == 0
        waited: list[Any] = []
        # a waited run streams nothing: the page reads its events and streams the answer
        # into the chat from its model's pieces
        waiter = threading.Thread(
            target=lambda: waited.append(client.runs.wait(thread, "boss", input=said("Rome")))
        )
        waiter.start()
        try:
            page.locator("#messages .msg.streaming", has_text=THINKING).wait_for()
            card = page.locator("#timeline .run")
            assert card.count() == 1
            assert card.locator(".pill").first.inner_text() == "running"
            card.locator(".row.tool.has-sub .row.tool", has_text="get_weather").wait_for()
            # the steps done so far are in the chat already (read at each checkpoint)
            page.locator("#messages .msg.user", has_text="Rome").wait_for()
            page.wait_for_selector("#stop", state="visible")
            page.wait_for_selector("#thread-status.busy")
            screenshot(page, tmp_path, "page-runs-live")
        finally:
            release.set()
            waiter.join(TIMEOUT / 1000)
        page.locator("#messages .msg.assistant", has_text="and it says: sunny.").wait_for()
        page.wait_for_selector("#timeline .run .pill.done")
        page.wait_for_selector("#stop", state="hidden")
        assert waited and waited[0]["messages"][-1]["content"].endswith("it says: sunny.")
        screenshot(page, tmp_path, "page-runs-live-done")

        # one started as agent-chat-ui starts it (values and messages-tuple) shows up too
        client.runs.create(
            thread, "boss", input=said("Oslo"), stream_mode=["values", "messages-tuple"]
        )
        page.locator("#messages .msg.user", has_text="Oslo").wait_for()
        cards = page.locator("#timeline .run")
        cards.nth(1).locator(".pill.done").wait_for()
        inner = cards.nth(1).locator(".row.tool.has-sub .row.tool", has_text="get_weather")
        assert inner.locator("pre.result").inner_text() == "sunny in Oslo"
        assert cards.count() == 2

        # a thread made elsewhere joins the list when the page is seen again
        other = client.threads.create(metadata={"title": "From a script"})["thread_id"]
        page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
        page.wait_for_selector(f"#thread option[value='{other}']", state="attached")
        assert page.locator(f"#thread option[value='{other}']").inner_text() == (
            "From a script · idle · just now"
        )
        assert page.locator("#thread").input_value() == thread  # the one shown stays
        assert page.errors == []


def test_a_join_reads_a_runs_sub_agents_when_asked_whatever_its_client_streamed() -> None:
    """``stream_subgraphs`` on ``GET .../runs/{id}/stream`` (ours): a run streamed without
    its subgraphs is read with them (the page's timeline nests sub-agents), and without them
    by default, as it was streamed."""
    with live_server(create_app({"boss": boss(MemorySaver())})) as url:
        with get_sync_client(url=url) as client:
            thread = client.threads.create()["thread_id"]
            client.runs.wait(thread, "boss", input=said("Rome"))
            run_id = client.runs.list(thread)[0]["run_id"]
        path = f"{url}/threads/{thread}/runs/{run_id}/stream"
        plain = httpx.get(path, params={"stream_mode": "run_events"}).text
        nested = httpx.get(
            path, params={"stream_mode": "run_events", "stream_subgraphs": "true"}
        ).text
    assert "event: run_events|" not in plain
    assert "event: run_events|researcher:" in nested and '"name":"get_weather"' in nested
