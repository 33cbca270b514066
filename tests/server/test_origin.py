"""A page of another origin cannot use the server through its visitor's browser: in headless
Chromium, a page served from a second local origin (another port) sends the requests a page
can send without the browser asking the server first (a ``text/plain`` body, no preflight)
to make a thread, run an agent and approve a paused payment: the server refuses each, and
nothing is made, run or approved. With ``allow_origins`` (``--allow-origin``) that origin is
let in, with CORS; a body must still be declared as JSON (415)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from checkpoint import MemorySaver
from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall, tool
from graph_agent.cli import _serve, main
from graph_agent.server import create_app
from hooks import HumanInTheLoopHook
from tests._needs import need_module, unavailable

from .conftest import live_server

sync_api = need_module("playwright.sync_api", "Playwright's Python package is in the dev extra")
CHROMIUM = (
    os.environ.get("GRAPH_AGENT_CHROMIUM")
    or shutil.which("chromium")
    or shutil.which("chromium-browser")
)

PAID: list[str] = []  # what send_payment did


@tool
def send_payment(to: str) -> str:
    """Send money."""
    PAID.append(to)
    return f"paid {to}"


def payments() -> ReactAgent:
    asks = AssistantMessage(
        "", tool_calls=[ToolCall(id="call_pay", name="send_payment", arguments='{"to": "Eve"}')]
    )
    return ReactAgent(
        name="payments",
        model=ScriptedChatModel([asks, "Paid."] * 5),
        tools=[send_payment],
        hooks=[HumanInTheLoopHook(["send_payment"])],
        saver=MemorySaver(),
    )


PAY = {"messages": [{"role": "user", "content": "pay Eve"}]}
APPROVE = {"resume": {"tool_call_id": "call_pay", "decision": "approved"}}


class Paused:
    """The server (no token, the default), with thread ``pay`` paused on a payment, and
    the answers it sent (method, path, status), as they went on the wire."""

    def __init__(self, url: str, answers: list[tuple[str, str, int]]) -> None:
        self.url = url
        self.answers = answers


def recorded(app: Any, answers: list[tuple[str, str, int]]) -> Any:
    async def wrapper(scope: Any, receive: Any, send: Any) -> None:
        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                answers.append((scope["method"], scope["path"], message["status"]))
            await send(message)

        await app(scope, receive, sending)

    return wrapper


@pytest.fixture
def paused() -> Iterator[Paused]:
    PAID.clear()
    answers: list[tuple[str, str, int]] = []
    with live_server(recorded(create_app({"payments": payments()}), answers)) as url:
        waited = httpx.post(
            f"{url}/threads/pay/runs/wait",
            json={"assistant_id": "payments", "if_not_exists": "create", "input": PAY},
        )
        assert "__interrupt__" in waited.json()
        answers.clear()
        yield Paused(url, answers)


@pytest.fixture
def other_origin() -> Iterator[str]:
    """A second local origin (another port) serving a page of its own."""

    async def page(request: Any) -> HTMLResponse:
        return HTMLResponse("<!doctype html><title>another site</title><p>hello</p>")

    with live_server(Starlette(routes=[Route("/", page)])) as url:
        yield url


@pytest.fixture
def browser() -> Iterator[Any]:
    if CHROMIUM is None:
        unavailable(
            "needs Debian's chromium on PATH (or GRAPH_AGENT_CHROMIUM); .ci/run installs it"
        )
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    try:
        yield opened
    finally:
        context.close()


# What a page can send to another origin with no preflight: a text/plain body.
SEND = """async ([url, mode, contentType, body]) => {
  try {
    const response = await fetch(url, {
      method: "POST", mode, body, headers: {"Content-Type": contentType},
    });
    return mode === "no-cors" ? "sent" : [response.status, await response.text()];
  } catch (error) {
    return "blocked: " + error.message;
  }
}"""


def send(
    page: Any, url: str, body: Any, *, mode: str = "cors", content_type: str = "text/plain"
) -> Any:
    return page.evaluate(SEND, [url, mode, content_type, json.dumps(body)])


def test_a_page_of_another_origin_cannot_make_run_or_approve(
    paused: Paused, other_origin: str, page: Any
) -> None:
    page.goto(other_origin + "/")
    url = paused.url
    run = {"assistant_id": "payments", "if_not_exists": "create", "input": PAY}
    approve = {"assistant_id": "payments", "command": APPROVE}
    tries = [
        ("/threads", {"thread_id": "made"}),
        ("/threads/ran/runs/wait", run),
        ("/threads/pay/runs/wait", approve),
        ("/threads/pay/runs/stream", approve),
        ("/threads/pay/runs", approve),
    ]
    for mode in ("cors", "no-cors"):
        for path, body in tries:
            send(page, url + path, body, mode=mode)
    # the server refused every one (403)
    assert paused.answers == [("POST", path, 403) for _ in range(2) for path, _ in tries]
    # nothing was made, run or approved
    assert [t["thread_id"] for t in httpx.post(f"{url}/threads/search", json={}).json()] == ["pay"]
    assert httpx.get(f"{url}/threads/made").status_code == 404
    assert httpx.get(f"{url}/threads/ran").status_code == 404
    assert httpx.get(f"{url}/threads/pay").json()["status"] == "interrupted"
    assert len(httpx.get(f"{url}/threads/pay/runs").json()) == 1
    assert PAID == []


def test_the_server_says_why_and_what_to_do() -> None:
    with live_server(create_app({"payments": payments()})) as url:
        evil = {"Origin": "http://evil.example", "Content-Type": "application/json"}
        refused = httpx.post(f"{url}/threads", headers=evil, content=b"{}")
        assert refused.status_code == 403
        assert "--allow-origin http://evil.example" in refused.json()["detail"]
        assert "access-control-allow-origin" not in refused.headers  # CORS off
        # a preflight from it is refused too (as JSON)
        preflight = httpx.options(
            f"{url}/threads",
            headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
        )
        assert preflight.status_code == 403 and "allow-origin" in preflight.json()["detail"]
        # a plain GET a page of another site made (no Origin, Sec-Fetch-Site says so)
        cross = httpx.get(f"{url}/threads/pay", headers={"Sec-Fetch-Site": "cross-site"})
        assert cross.status_code == 403
        # the server's own origin, and clients that are not browsers (no Origin), are in
        own = {"Origin": url, "Content-Type": "application/json; charset=utf-8"}
        assert httpx.post(f"{url}/threads", headers=own, content=b"{}").status_code == 200
        assert httpx.post(f"{url}/threads", json={}).status_code == 200
        assert httpx.get(f"{url}/ok", headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200
        # a body not declared as JSON is a 415 that says what to send
        for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
            headers = {"Content-Type": content_type} if content_type else {}
            plain = httpx.post(f"{url}/threads", headers=headers, content=b'{"thread_id": "x"}')
            assert plain.status_code == 415
            assert "Content-Type: application/json" in plain.json()["detail"]
        assert httpx.get(f"{url}/threads/x").status_code == 404
        # behind a proxy that says where the request was sent, that origin is the server's
        proxied = {
            "Origin": "https://agents.example.org",
            "X-Forwarded-Proto": "https",
            "X-Forwarded-Host": "agents.example.org",
        }
        assert httpx.post(f"{url}/threads", headers=proxied, json={}).status_code == 200
        # (docs/serving.md's nginx passes the Host the page was loaded from, and the scheme)
        nginx = {
            "Host": "agents.example.org:8443",
            "X-Forwarded-Proto": "https",
            "Origin": "https://agents.example.org:8443",
        }
        assert httpx.post(f"{url}/threads", headers=nginx, json={}).status_code == 200
        nginx["Origin"] = "https://evil.example"
        assert httpx.post(f"{url}/threads", headers=nginx, json={}).status_code == 403


def test_an_allowed_origin_is_let_in_with_cors(other_origin: str, page: Any) -> None:
    PAID.clear()
    app = create_app({"payments": payments()}, allow_origins=[other_origin + "/"])
    with live_server(app) as url:
        page.goto(other_origin + "/")
        made = send(page, f"{url}/threads", {"thread_id": "made"}, content_type="application/json")
        assert made[0] == 200 and json.loads(made[1])["thread_id"] == "made"
        run = {"assistant_id": "payments", "input": PAY}
        waited = send(page, f"{url}/threads/made/runs/wait", run, content_type="application/json")
        assert waited[0] == 200 and "__interrupt__" in json.loads(waited[1])
        approve = {"assistant_id": "payments", "command": APPROVE}
        done = send(page, f"{url}/threads/made/runs/wait", approve, content_type="application/json")
        assert done[0] == 200 and PAID == ["Eve"]
        # still a JSON body only: a text/plain one is a 415 the page can read
        plain = send(page, f"{url}/threads", {"thread_id": "plain"})
        assert plain[0] == 415 and "application/json" in json.loads(plain[1])["detail"]
        assert httpx.get(f"{url}/threads/plain").status_code == 404


@pytest.mark.parametrize("origin", ["*", "http://x.example/path", "localhost:3000", "ftp://x"])
def test_an_allowed_origin_must_be_one(origin: str) -> None:
    with pytest.raises(ValueError, match="is not an origin"):
        create_app({"payments": payments()}, allow_origins=[origin])


def test_serve_takes_allow_origin(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = tmp_path / "app.py"
    module.write_text(
        "from graph_agent import ReactAgent, ScriptedChatModel\n"
        "agent = ReactAgent(name='helper', model=ScriptedChatModel(['hi']))\n"
    )
    apps: list[Any] = []
    monkeypatch.setattr(
        _serve, "listen_and_serve", lambda app, h, p, announce: (apps.append(app), announce())
    )
    args = ["serve", f"{module}:agent", "--saver", "memory"]
    assert main([*args, "--allow-origin", "http://localhost:3000"]) == 0
    with live_server(apps[0]) as url:
        let_in = {"Origin": "http://localhost:3000"}
        answer = httpx.post(f"{url}/threads", headers=let_in, json={})
        assert answer.status_code == 200
        assert answer.headers["access-control-allow-origin"] == "http://localhost:3000"
        other = {"Origin": "http://localhost:3001"}
        assert httpx.post(f"{url}/threads", headers=other, json={}).status_code == 403
    capsys.readouterr()
    assert main([*args, "--allow-origin", "localhost:3000"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("graph-agent serve: error: --allow-origin: 'localhost:3000' is not")
    assert len(said.splitlines()) == 1
