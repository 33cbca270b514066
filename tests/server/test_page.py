"""The web page at ``/``, driven in headless Chromium against a real uvicorn (tests/server/
page_kit.py): a streamed answer with its tool call and model calls (tokens, durations) in the
timeline, an interrupt approved from the page and one edited after a reload, sub-agents nested
in the timeline (an agent used as a tool, a flow's), a failing tool and a failing run, a
stream cut short and rejoined after its last event id, the bearer token asked for.

Each test saves a screenshot (page_kit.screenshot: in its ``tmp_path``, and in the artifacts
folder when ``GRAPH_AGENT_TEST_ARTIFACTS`` is set).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from checkpoint import MemorySaver
from graph_agent import (
    AssistantMessage,
    ChatResponse,
    FunctionChatModel,
    ReactAgent,
    ScriptedChatModel,
    SequentialAgent,
    ToolCall,
    Usage,
    tool,
)
from graph_agent.server import create_app
from hooks import HumanInTheLoopHook

from ..agent.flow_kit import Meeting
from .conftest import live_server
from .page_kit import TIMEOUT, browser_fixture, page_fixture, say, screenshot  # noqa: F401
from .served_kit import get_weather, refund


def asks(name: str, arguments: dict[str, Any], call_id: str) -> ChatResponse:
    message = AssistantMessage(
        "", tool_calls=[ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))]
    )
    return ChatResponse.of(message, "tool_calls", usage=Usage(21, 9, 30))


def says(text: str) -> ChatResponse:
    return ChatResponse.of(AssistantMessage(text), "stop", usage=Usage(40, 12, 52))


class PacedScriptedChatModel(ScriptedChatModel):
    """Streams an answer's first piece, then waits until the page has drawn it in a bubble
    (``drawn``, set from the page: STREAMED_BUBBLES) before it sends the rest: the page shows
    the answer growing, whatever the machine's speed."""

    def __init__(self, responses: list[Any], drawn: threading.Event) -> None:
        super().__init__(responses)
        self.drawn = drawn

    async def astream(self, prompt: Any) -> AsyncIterator[ChatResponse]:
        first = True
        async for chunk in super().astream(prompt):
            yield chunk
            if first and chunk.result.output.text:
                first = False
                assert await asyncio.to_thread(self.drawn.wait, TIMEOUT / 1000), "not drawn"


def weather_agent(drawn: threading.Event | None = None) -> ReactAgent:
    """With ``drawn``, its answer waits for the page to draw its first piece (the page must
    tell it: ``page.expose_function("bubbleDrawn", ...)``)."""
    script = [asks("get_weather", {"city": "Paris"}, "call_1"), says("It is sunny in Paris today.")]
    model = ScriptedChatModel(script) if drawn is None else PacedScriptedChatModel(script, drawn)
    return ReactAgent(name="weather", model=model, tools=[get_weather], saver=MemorySaver())


def refund_agent() -> ReactAgent:
    model = ScriptedChatModel([asks("refund", {"amount": 5}, "call_7"), says("Refunded 5 euros.")])
    return ReactAgent(
        name="refunds",
        model=model,
        tools=[refund],
        hooks=[HumanInTheLoopHook(["refund"])],
        saver=MemorySaver(),
    )


def boss_agent() -> ReactAgent:
    """An agent that asks another agent (``as_tool``): the helper's run nests in the
    timeline under the tool call that ran it."""
    helper = ReactAgent(
        name="researcher",
        model=ScriptedChatModel(
            [asks("get_weather", {"city": "Rome"}, "call_r"), says("Rome is sunny.")]
        ),
        tools=[get_weather],
    )
    model = ScriptedChatModel(
        [asks("researcher", {"input": "Weather in Rome?"}, "call_b"), says("Rome: sunny.")]
    )
    return ReactAgent(name="boss", model=model, tools=[helper.as_tool()], saver=MemorySaver())


def test_chat_streams_the_answer_shows_the_tool_call_and_approves_an_interrupt(
    page: Any, tmp_path: Path
) -> None:
    drawn = threading.Event()
    page.expose_function("bubbleDrawn", lambda text: drawn.set())
    app = create_app({"weather": weather_agent(drawn), "refunds": refund_agent()})
    with live_server(app) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=true]")
        assert page.locator("#agent option").all_inner_texts() == ["weather", "refunds"]
        # the graph, drawn from GET /assistants/{id}/graph
        page.wait_for_selector("#graph svg .node[data-node=tools]")
        assert page.locator("#graph svg .node[data-node=model]").count() == 1

        say(page, "Weather in Paris?")
        answer = page.locator(".msg.assistant", has_text="It is sunny in Paris today.")
        answer.wait_for()
        # streamed word by word: the bubble showed the answer growing before it was whole
        assert page.evaluate("window.graphAgentPage.deltas") >= 5
        final = "It is sunny in Paris today."
        bubbles = page.evaluate("window.streamedBubbles")
        assert [b for b in bubbles if b and b != final and final.startswith(b)], bubbles
        tool_row = page.locator("#timeline .row.tool", has_text="get_weather")
        tool_row.wait_for()
        assert '"city": "Paris"' in tool_row.locator("pre.args").inner_text()
        assert tool_row.locator("pre.result").inner_text() == "sunny in Paris"
        models = page.locator("#timeline .row.model")
        assert models.count() == 2
        assert "21 in / 9 out tokens" in models.nth(0).inner_text()
        assert "40 in / 12 out tokens" in models.nth(1).inner_text()
        assert page.locator(".msg .tool-call", has_text="get_weather").count() == 1
        assert page.locator(".msg.tool", has_text="sunny in Paris").count() == 1
        page.wait_for_selector("#timeline .run .pill.done")
        page.wait_for_selector("#thread-status.idle")
        page.wait_for_selector("#graph .node.visited[data-node=__end__]")
        screenshot(page, tmp_path, "page-weather")

        page.select_option("#agent", label="refunds")
        page.wait_for_selector("#graph svg .node[data-node='HumanInTheLoopHook.after_model']")
        page.click("#new-thread")
        say(page, "Refund my 5 euros")
        card = page.locator(".interrupt .approval", has_text="refund")
        card.wait_for()
        assert json.loads(card.locator("textarea.arguments").input_value()) == {"amount": 5}
        page.wait_for_selector("#thread-status.interrupted")
        page.wait_for_selector("#timeline .row.interrupt", state="attached")
        page.wait_for_selector("#send:not([disabled])")
        screenshot(page, tmp_path, "page-interrupt")

        card.locator("button.approve").click()
        page.locator(".msg.assistant", has_text="Refunded 5 euros.").wait_for()
        assert page.locator("#interrupts").is_hidden()
        resumed = page.locator("#timeline .run").nth(1)
        resumed.locator(".row.tool", has_text="refund").wait_for()
        assert resumed.locator(".row.tool pre.result").inner_text() == "refunded 5"
        page.wait_for_selector("#thread-status.idle")
        page.set_viewport_size({"width": 1400, "height": 1250})  # room for the whole timeline
        shot = screenshot(page, tmp_path, "page")
        assert shot.stat().st_size > 10_000
        assert page.errors == []


def test_an_edited_call_runs_with_the_new_arguments_and_the_page_survives_a_reload(
    page: Any, tmp_path: Path
) -> None:
    app = create_app({"refunds": refund_agent()})
    with live_server(app) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=true]")
        say(page, "Refund my 5 euros")
        card = page.locator(".interrupt .approval")
        card.wait_for()
        # the thread is in the address: a reload comes back to it, paused, with its run
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        card.wait_for()
        page.locator("#timeline .run .row.interrupt").wait_for(state="attached")
        card.locator("textarea.arguments").fill('{"amount": 3}')
        card.locator("button.edit").click()
        page.locator(".msg.tool", has_text="refunded 3").wait_for()
        tool_row = page.locator("#timeline .row.tool", has_text="refund")
        assert '"amount": 3' in tool_row.locator("pre.args").inner_text()
        screenshot(page, tmp_path, "page-edited")
        assert page.errors == []


def flow_agent() -> SequentialAgent:
    """A flow of two sub-agents: each one's run nests under the flow's node that ran it."""
    first = ReactAgent(name="first", model=ScriptedChatModel([says("one")]))
    second = ReactAgent(name="second", model=ScriptedChatModel([says("two")]))
    return SequentialAgent(name="pair", sub_agents=[first, second], saver=MemorySaver())


def test_sub_agents_nest_under_the_tool_call_or_the_flow_node_that_ran_them(
    page: Any, tmp_path: Path
) -> None:
    app = create_app({"boss": boss_agent(), "pair": flow_agent()})
    with live_server(app) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=true]")
        page.select_option("#agent", label="pair")
        page.wait_for_selector("#graph svg .node[data-node=second]")
        say(page, "Count")
        page.locator(".msg.assistant", has_text="two").wait_for()
        for name, text in (("first", "one"), ("second", "two")):
            node = page.locator("#timeline .row.node", has_text=name).first
            assert node.locator(".row.model").count() == 1
            assert text in node.locator(".row.model .said").inner_text()
        screenshot(page, tmp_path, "page-flow")

        page.select_option("#agent", label="boss")
        page.wait_for_selector("#graph svg .node[data-node=tools]")
        page.click("#new-thread")
        say(page, "Weather in Rome?")
        page.locator(".msg.assistant", has_text="Rome: sunny.").wait_for()
        outer = page.locator("#timeline .row.tool", has_text="researcher").first
        inner = outer.locator(".row.tool", has_text="get_weather")
        inner.wait_for()
        assert inner.locator("pre.result").inner_text() == "sunny in Rome"
        assert outer.locator(".row.model").count() == 2  # the sub-agent's two model calls
        screenshot(page, tmp_path, "page-sub-agent")
        assert page.errors == []


def twins_agent() -> ReactAgent:
    """An agent that asks the same agent twice at once: each run nests under its own call."""

    both_running = Meeting(2)

    async def research(prompt: Any) -> str:
        city = prompt.messages[-1].text
        await both_running.await_(city)  # neither answers before both calls are running
        return f"notes on {city}"

    helper = ReactAgent(name="researcher", model=FunctionChatModel(research))
    both = AssistantMessage(
        "",
        tool_calls=[
            ToolCall(id=f"call_{city}", name="researcher", arguments=json.dumps({"input": city}))
            for city in ("Oslo", "Lima")
        ],
    )
    model = ScriptedChatModel([both, says("Both researched.")])
    return ReactAgent(name="twins", model=model, tools=[helper.as_tool()], saver=MemorySaver())


def test_two_calls_of_one_agent_at_once_each_nest_under_their_own_call(
    page: Any, tmp_path: Path
) -> None:
    with live_server(create_app({"twins": twins_agent()})) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=true]")
        say(page, "Research both")
        page.locator(".msg.assistant", has_text="Both researched.").wait_for()
        calls = page.locator("#timeline .row.tool", has_text="researcher")
        assert calls.count() == 2
        for i in range(2):
            call = calls.nth(i)
            city = json.loads(call.locator("pre.args").first.inner_text())["input"]
            said = call.locator(".row.model .said")
            assert said.count() == 1
            assert said.inner_text() == f"notes on {city}"
        assert page.errors == []


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    raise ValueError(f"no such city: {city}")


def test_a_failing_tool_and_a_failing_run_show_their_errors(page: Any, tmp_path: Path) -> None:
    careless = ReactAgent(
        name="careless",
        model=ScriptedChatModel(
            [asks("lookup", {"city": "Atlantis"}, "call_x"), ValueError("the model is down")]
        ),
        tools=[lookup],
        saver=MemorySaver(),
    )
    app = create_app({"careless": careless})
    with live_server(app) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=true]")
        say(page, "Where is Atlantis?")
        page.wait_for_selector("#notice:not([hidden])")
        assert "the model is down" in page.locator("#notice").inner_text()
        failed_tool = page.locator("#timeline .row.tool.failed", has_text="lookup")
        assert "no such city: Atlantis" in failed_tool.locator("pre.error").inner_text()
        assert '"city": "Atlantis"' in failed_tool.locator("pre.args").inner_text()
        page.wait_for_selector("#timeline .run .pill.error")
        page.wait_for_selector("#thread-status.error")
        assert page.locator("#timeline .run > ol > .row.error").count() == 1
        screenshot(page, tmp_path, "page-errors")
        assert page.errors == []


def test_with_a_token_the_page_asks_for_it_and_sends_it(page: Any, tmp_path: Path) -> None:
    app = create_app({"weather": weather_agent()}, token="s3cret")
    with live_server(app) as url:
        page.goto(url + "/")  # the page itself loads without the token
        page.wait_for_selector("#token-dialog[open]")
        page.fill("#token-input", "wrong")
        page.click("#token-ok")
        page.wait_for_selector("#token-dialog[open]")
        assert "refused" in page.locator("#token-why").inner_text()
        page.fill("#token-input", "s3cret")
        page.click("#token-ok")
        page.wait_for_selector("body[data-ready=true]")
        say(page, "Weather in Paris?")
        page.locator(".msg.assistant", has_text="It is sunny in Paris today.").wait_for()
        assert page.errors == []


def test_a_stream_cut_short_is_rejoined_after_its_last_event_id(page: Any, tmp_path: Path) -> None:
    """The run's stream ends after 6 events while the run is said to go on: the page asks
    for the run's stream again with ``Last-Event-ID: 6`` and gets every later event once."""
    app = create_app({"weather": weather_agent()})
    with live_server(app) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=true]")

        def cut(route: Any) -> None:
            response = route.fetch()
            events = re.split(r"\r?\n\r?\n", response.text())  # SSE events end with a blank line
            route.fulfill(response=response, body="\r\n\r\n".join(events[:6]) + "\r\n\r\n")

        said_running: list[str] = []

        def still_running(route: Any) -> None:
            if route.request.method != "GET" or said_running:
                route.fallback()
                return
            said_running.append(route.request.url)
            route.fulfill(json={"status": "running"})

        rejoins: list[str | None] = []

        def watch(request: Any) -> None:
            if request.method == "GET" and request.url.endswith("/stream"):
                rejoins.append(request.headers.get("last-event-id"))

        page.route("**/threads/*/runs/stream", cut)
        page.route(re.compile(r".*/threads/[^/]+/runs/[^/?]+$"), still_running)
        page.on("request", watch)
        say(page, "Weather in Paris?")
        page.locator(".msg.assistant", has_text="It is sunny in Paris today.").wait_for()
        page.wait_for_selector("#timeline .run .pill.done")
        assert rejoins == ["6"]
        assert page.locator("#timeline .row.tool").count() == 1
        assert page.locator("#timeline .row.model").count() == 2
        assert page.locator("#timeline .row.node").count() == 3
        screenshot(page, tmp_path, "page-rejoined")
        assert page.errors == []
