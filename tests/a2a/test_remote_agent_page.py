"""A person answers a remote A2A agent's question through our page, in headless Chromium
(tests/server/page_kit.py): our agent, served on a real uvicorn, calls a remote A2A agent
(a2a-sdk's server, tests/a2a/_remote_server.py) as a tool; the remote's ``input-required``
is our run's interrupt, shown as a card on the page; the answer typed there completes the
same remote task, and the chat shows the remote's answer and ours."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall
from graph_agent.a2a import RemoteA2AAgent
from graph_agent.server import create_app
from tests.server.page_kit import browser_fixture, page_fixture, say, screenshot  # noqa: F401

from ._remote_server import served


def test_a_remote_agent_s_question_is_answered_on_our_page(
    remote_url: str, page: Any, tmp_path: Path
) -> None:
    remote = RemoteA2AAgent(remote_url)
    call = ToolCall(id="call_1", name="travel", arguments=json.dumps({"input": "book a seat"}))
    model = ScriptedChatModel([AssistantMessage("", tool_calls=[call]), "Booked it for you."])
    agent = ReactAgent(name="assistant", model=model, tools=[remote.as_tool()])
    app = create_app({"assistant": agent})
    with served(lambda url: app) as url:
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=true]")
        say(page, "book me a seat")
        card = page.locator("#interrupts .interrupt", has_text="Which city?")
        card.wait_for()
        page.wait_for_selector("#thread-status.interrupted")
        screenshot(page, tmp_path, "page-remote-question")

        card.locator("textarea.resume-value").fill('"Quito"')
        card.locator("button.resume").click()
        page.locator(".msg.assistant", has_text="Booked it for you.").wait_for()
        page.locator(".msg.tool", has_text="Booked for Quito (task ").wait_for()
        page.wait_for_selector("#thread-status.idle")
        assert page.locator("#interrupts").is_hidden()
        screenshot(page, tmp_path, "page-remote-answered")
    assert page.errors == []
