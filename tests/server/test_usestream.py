"""The front end people already use, unchanged: a small React chat of the suite's own
(``tests/server/usestream/``) on ``@langchain/langgraph-sdk``'s ``useStream`` hook, what
agent-chat-ui and LangChain's front-end docs are built on, bundled by esbuild and run in
headless Chromium from an origin of its own (as agent-chat-ui is: the server lets it in with
``allow_origins``) against a real uvicorn (the thread switch against ``graph-agent serve``,
threads in SQLite): a conversation of two turns, the answer streamed as it grows, a tool
call and its result, an approval answered in LangChain's shape (``{"decisions": [{"type":
"approve"}]}``, a rejection, an edit), a switch between threads; and two things the hook does
beside: a reload in the middle of an answer rejoins the run (``reconnectOnMount``), and
``stop()`` ends the run, what was streamed kept.

Needs Node.js and the packages pinned by ``tests/server/usestream/package-lock.json``
(``make test`` and ``.ci/run`` install them once in a cache, ``.ci/npm-cached``, and set
``USESTREAM_JS`` to their ``node_modules``), Playwright's Python package and Debian's
chromium; without them the tests skip and say so (fail on CI: tests/_needs.py). Each test
saves screenshots in its ``tmp_path``, copied to ``tests/server/artifacts/`` with
``GRAPH_AGENT_TEST_ARTIFACTS=1`` (page_kit.screenshot).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from checkpoint import MemorySaver
from graph_agent import ReactAgent, ScriptedChatModel
from graph_agent.server import create_app
from hooks import HumanInTheLoopHook
from tests._needs import unavailable
from tests.redis_servers import free_port

from .conftest import live_server, serve_process, stop_process
from .node_kit import installed
from .page_kit import TIMEOUT, browser_fixture, say, screenshot  # noqa: F401
from .served_kit import get_weather, refund
from .test_page import PacedScriptedChatModel, asks, says

HERE = Path(__file__).resolve().parent / "usestream"
PACKAGES = ("@langchain/langgraph-sdk", "@langchain/core", "react", "react-dom", "esbuild")

# every text an assistant bubble showed, in order, and a call to the test at each
AI_TEXTS = """
window.aiTexts = [];
new MutationObserver(() => {
  for (const node of document.querySelectorAll(".msg.ai .text")) {
    const text = node.textContent;
    if (text && !window.aiTexts.includes(text)) {
      window.aiTexts.push(text);
      if (window.bubbleDrawn) window.bubbleDrawn(text);
    }
  }
}).observe(document, {childList: true, subtree: true, characterData: true});
"""


@pytest.fixture(scope="module")
def front_end(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The app bundled by esbuild into a folder of its own: index.html and app.js."""
    modules, node = installed(HERE, "USESTREAM_JS", PACKAGES), shutil.which("node")
    if modules is None or node is None:
        unavailable(
            "needs node and the packages of tests/server/usestream: "
            "npm ci --prefix tests/server/usestream (or USESTREAM_JS=<their node_modules>); "
            "make test installs them where npm is (.ci/npm-cached), .ci/run Node.js too"
        )
    work = tmp_path_factory.mktemp("usestream")
    shutil.copytree(HERE / "src", work / "src")
    (work / "node_modules").symlink_to(modules)  # esbuild resolves imports next to the source
    out = work / "dist"
    started = time.monotonic()
    built = subprocess.run(
        [str(modules / "esbuild" / "bin" / "esbuild"), "src/app.jsx", "--bundle",
         "--format=esm", "--target=es2020", f"--outfile={out / 'app.js'}",
         '--define:process.env.NODE_ENV="production"', "--log-level=warning"],
        cwd=work, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    print(f"esbuild bundled the useStream app in {time.monotonic() - started:.2f}s")
    shutil.copy(HERE / "index.html", out / "index.html")
    return out


@contextmanager
def front_end_origin(front_end: Path) -> Iterator[str]:
    """The bundled front end served on an origin of its own; yields that origin."""

    async def index(request: Any) -> FileResponse:
        return FileResponse(front_end / "index.html")

    async def bundle(request: Any) -> FileResponse:
        return FileResponse(front_end / "app.js", media_type="text/javascript")

    async def no_icon(request: Any) -> Response:
        return Response(status_code=204)

    files = Starlette(
        routes=[Route("/", index), Route("/app.js", bundle), Route("/favicon.ico", no_icon)]
    )
    with live_server(files) as origin:
        yield origin


@contextmanager
def served(agent: ReactAgent, front_end: Path) -> Iterator[str]:
    """The front end on one origin and ``agent`` (as ``agent``, in this process) on another
    that lets it in, as agent-chat-ui runs beside ``langgraph dev``; yields the page's URL."""
    with (
        front_end_origin(front_end) as origin,
        live_server(create_app({"agent": agent}, allow_origins=[origin])) as api,
    ):
        yield f"{origin}/?api={api}&assistant=agent"


@contextmanager
def served_by_cli(module: Path, front_end: Path, db: Path) -> Iterator[str]:
    """As ``served``, the agent of ``module`` served by ``graph-agent serve`` (a process of
    its own, threads in the SQLite file ``db``, ``--allow-origin`` the front end's)."""
    with front_end_origin(front_end) as origin:
        port = free_port()
        process = serve_process(module, db, port, "--allow-origin", origin, "--no-access-log")
        try:
            yield f"{origin}/?api=http://127.0.0.1:{port}&assistant=agent"
        finally:
            stop_process(process)


def chat_agent(script: list[Any], drawn: threading.Event | None = None) -> ReactAgent:
    """An agent with a tool (``get_weather``) and one that needs a person's approval
    (``refund``); with ``drawn``, each answer waits after its first piece until the page has
    drawn it (PacedScriptedChatModel)."""
    model = ScriptedChatModel(script) if drawn is None else PacedScriptedChatModel(script, drawn)
    return ReactAgent(
        name="agent",
        model=model,
        tools=[get_weather, refund],
        hooks=[HumanInTheLoopHook(["refund"])],
        saver=MemorySaver(),
    )


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page that keeps its uncaught errors and console errors (``page.errors``: the hook
    logs a failed stream there) and every request the server refused (``page.refused``: an
    endpoint useStream needs and we lack shows there)."""
    context = browser.new_context(viewport={"width": 1100, "height": 760})
    opened = context.new_page()
    opened.set_default_timeout(TIMEOUT)
    opened.add_init_script(AI_TEXTS)
    errors: list[str] = []
    refused: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("console", lambda line: errors.append(line.text) if line.type == "error" else None)
    opened.on(
        "response",
        lambda answer: refused.append(described(answer)) if answer.status >= 400 else None,
    )
    # (Chromium may call a stream read to its end ERR_ABORTED when the page lets go of it
    # before the browser heard the response was complete: what the user sees tells instead)
    opened.on(
        "requestfailed",
        lambda request: (
            refused.append(f"{request.method} {request.url}: {request.failure}")
            if request.failure != "net::ERR_ABORTED"
            else None
        ),
    )
    opened.errors = errors
    opened.refused = refused
    try:
        yield opened
    finally:
        context.close()


def described(answer: Any) -> str:
    return f"{answer.request.method} {answer.url}: {answer.status} {answer.text()[:300]}"


def api_of(url: str) -> str:
    """The server's URL in the page's URL (``served``)."""
    return parse_qs(urlsplit(url).query)["api"][0]


def answered(page: Any, text: str) -> None:
    """Wait until an assistant bubble says ``text`` and the run is over."""
    page.locator(".msg.ai .text", has_text=text).wait_for()
    page.wait_for_selector("#app[data-loading=false]")


def shown(page: Any) -> list[tuple[str, str]]:
    """Each message on screen: its kind (human, ai, tool) and its text (a tool's result)."""
    return [
        (kind.split()[1], text)
        for kind, text in page.eval_on_selector_all(
            "#messages .msg",
            "els => els.map(e => [e.className, e.querySelector('.text')?.textContent ?? ''])",
        )
    ]


def test_a_conversation_streams_its_answer_and_shows_the_tool_call(
    front_end: Path, page: Any, tmp_path: Path
) -> None:
    drawn = threading.Event()
    page.expose_function("bubbleDrawn", lambda text: drawn.set())
    final = "It is sunny in Paris today."
    script = [asks("get_weather", {"city": "Paris"}, "call_1"), says(final), says("Rain tomorrow.")]
    with served(chat_agent(script, drawn), front_end) as url:
        page.goto(url)
        page.wait_for_selector("#app[data-loading=false]")
        say(page, "Weather in Paris?")
        answered(page, final)
        # streamed: the bubble showed the answer growing before it was whole
        grown = page.evaluate("window.aiTexts")
        assert [text for text in grown if text != final and final.startswith(text)], grown
        call = page.locator(".msg.ai .tool-call[data-name=get_weather]")
        assert json.loads(call.locator("pre.args").inner_text()) == {"city": "Paris"}
        thread = page.get_attribute("#app", "data-thread")
        assert thread
        screenshot(page, tmp_path, "usestream-streamed-answer")

        say(page, "And tomorrow?")  # the conversation goes on in the same thread
        answered(page, "Rain tomorrow.")
        assert shown(page) == [
            ("human", "Weather in Paris?"),
            ("ai", ""),
            ("tool", "sunny in Paris"),
            ("ai", final),
            ("human", "And tomorrow?"),
            ("ai", "Rain tomorrow."),
        ]
        assert page.get_attribute("#app", "data-thread") == thread
        screenshot(page, tmp_path, "usestream-conversation")
    assert page.errors == [] and page.refused == []


AGENT_MODULE = """
import json

from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall
from tests.server.served_kit import get_weather


def asks(city: str, call_id: str) -> AssistantMessage:
    call = ToolCall(id=call_id, name="get_weather", arguments=json.dumps({"city": city}))
    return AssistantMessage("", tool_calls=[call])


script = [
    asks("Paris", "call_1"),
    "It is sunny in Paris.",
    asks("Rome", "call_2"),
    "It is sunny in Rome.",
    "Still sunny in Paris.",
]
agent = ReactAgent(name="agent", model=ScriptedChatModel(script), tools=[get_weather])
"""


def test_switching_threads_shows_each_conversation_and_goes_on_where_it_was(
    front_end: Path, page: Any, tmp_path: Path
) -> None:
    module = tmp_path / "weather.py"
    module.write_text(AGENT_MODULE)
    with served_by_cli(module, front_end, tmp_path / "threads.sqlite") as url:
        page.goto(url)
        page.wait_for_selector("#app[data-loading=false]")
        say(page, "Weather in Paris?")
        answered(page, "It is sunny in Paris.")
        paris = page.get_attribute("#app", "data-thread")
        page.click("#new-thread")
        page.wait_for_selector("#app[data-thread='']")
        assert shown(page) == []
        say(page, "Weather in Rome?")
        answered(page, "It is sunny in Rome.")
        rome = page.get_attribute("#app", "data-thread")
        assert paris and rome and paris != rome
        # the thread list (POST /threads/search), newest first, named by its first message
        page.wait_for_selector(f"#threads .thread[data-thread='{paris}']")
        assert page.locator("#threads .thread").all_inner_texts() == [
            "Weather in Rome?",
            "Weather in Paris?",
        ]

        page.click(f"#threads .thread[data-thread='{paris}']")
        page.locator(".msg.ai .text", has_text="It is sunny in Paris.").wait_for()
        page.wait_for_selector("#app[data-loading=false]")
        assert shown(page) == [
            ("human", "Weather in Paris?"),
            ("ai", ""),
            ("tool", "sunny in Paris"),
            ("ai", "It is sunny in Paris."),
        ]
        screenshot(page, tmp_path, "usestream-thread-switched")
        say(page, "Still sunny?")  # the old thread goes on where it was
        answered(page, "Still sunny in Paris.")
        assert page.get_attribute("#app", "data-thread") == paris
        assert [text for _, text in shown(page)][-2:] == ["Still sunny?", "Still sunny in Paris."]
        assert len(shown(page)) == 6

        page.click(f"#threads .thread[data-thread='{rome}']")
        page.locator(".msg.ai .text", has_text="It is sunny in Rome.").wait_for()
        assert shown(page) == [
            ("human", "Weather in Rome?"),
            ("ai", ""),
            ("tool", "sunny in Rome"),
            ("ai", "It is sunny in Rome."),
        ]
        screenshot(page, tmp_path, "usestream-threads")
    assert page.errors == [] and page.refused == []


def test_an_approval_in_langchains_shape_approves_rejects_and_edits(
    front_end: Path, page: Any, tmp_path: Path
) -> None:
    script = [
        asks("refund", {"amount": 5}, "call_7"),
        says("Refunded 5 euros."),
        asks("refund", {"amount": 50}, "call_8"),
        says("I did not refund 50 euros."),
        asks("refund", {"amount": 7}, "call_9"),
        says("Refunded 3 euros."),
    ]
    with served(chat_agent(script), front_end) as url:
        page.goto(url)
        page.wait_for_selector("#app[data-loading=false]")
        say(page, "Refund my 5 euros")
        # the pause as LangChain's human-in-the-loop middleware describes it
        action = page.locator(".interrupt.approval .action[data-name=refund]")
        action.wait_for()
        assert json.loads(action.locator("pre.args").inner_text()) == {"amount": 5}
        assert {"approve", "reject"} <= set(action.locator(".allowed").inner_text().split())
        page.wait_for_selector("#app[data-loading=false]")
        screenshot(page, tmp_path, "usestream-approval")

        page.click(".interrupt.approval button.approve")  # {"decisions": [{"type": "approve"}]}
        answered(page, "Refunded 5 euros.")
        assert page.locator(".interrupt").count() == 0
        assert shown(page) == [
            ("human", "Refund my 5 euros"),
            ("ai", ""),
            ("tool", "refunded 5"),
            ("ai", "Refunded 5 euros."),
        ]

        say(page, "And 50 more")
        action.locator("pre.args", has_text="50").wait_for()
        page.wait_for_selector("#app[data-loading=false]")
        # {"decisions": [{"type": "reject", "message": "Not now."}]}: the tool does not run
        page.click(".interrupt.approval button.reject")
        answered(page, "I did not refund 50 euros.")
        assert page.locator(".interrupt").count() == 0
        after = shown(page)[4:]
        assert [kind for kind, _ in after] == ["human", "ai", "tool", "ai"]
        assert "Not now." in after[2][1] and "refunded" not in after[2][1]
        screenshot(page, tmp_path, "usestream-rejected")

        say(page, "And 7 more")
        action.locator("pre.args", has_text="7").wait_for()
        page.wait_for_selector("#app[data-loading=false]")
        # {"decisions": [{"type": "edit", "edited_action": {"name": "refund", "args": ...}}]}
        action.locator("textarea.edit-args").fill('{"amount": 3}')
        screenshot(page, tmp_path, "usestream-editing")
        page.click(".interrupt.approval button.edit")
        answered(page, "Refunded 3 euros.")
        assert page.locator(".interrupt").count() == 0
        assert shown(page)[10:] == [("tool", "refunded 3"), ("ai", "Refunded 3 euros.")]
        edited = page.locator(".msg.ai .tool-call[data-name=refund]").nth(2)
        assert json.loads(edited.locator("pre.args").inner_text()) == {"amount": 3}
    assert page.errors == [] and page.refused == []


def test_a_reload_mid_answer_rejoins_the_run_and_shows_it_whole(
    front_end: Path, page: Any, tmp_path: Path
) -> None:
    """useStream's ``reconnectOnMount``: the run goes on when the page goes away
    (``on_disconnect: "continue"``), and the reloaded page rejoins its stream
    (``GET /threads/{id}/runs/{run}/stream``), replayed from the start."""
    going_on = threading.Event()  # the answer's rest waits for the reload
    final = "The answer is forty-two, as it always was."
    with served(chat_agent([says(final)], going_on), front_end) as url:
        page.goto(url + "&reconnect=1")
        page.wait_for_selector("#app[data-loading=false]")
        say(page, "The answer?")
        page.locator(".msg.ai .text").wait_for()  # its first piece
        assert page.locator(".msg.ai .text").inner_text() != final
        page.wait_for_url("**thread=*")
        joins: list[str] = []
        page.on("request", lambda r: joins.append(f"{r.method} {r.url}"))
        page.reload()
        page.locator(".msg.ai .text").wait_for()  # replayed
        page.wait_for_selector("#app[data-loading=true]")
        going_on.set()
        answered(page, final)
        assert [("human", "The answer?"), ("ai", final)] == shown(page)
        # rejoined, not run again
        assert [j for j in joins if re.search(r"^GET .*/threads/[^/]+/runs/[^/]+/stream", j)]
        assert not [j for j in joins if j.startswith("POST") and "/runs" in j], joins
        screenshot(page, tmp_path, "usestream-rejoined")
    assert page.errors == [] and page.refused == []


@contextmanager
def stopped_mid_answer(
    front_end: Path, page: Any, script: list[Any]
) -> Iterator[tuple[tuple[str, str], threading.Event]]:
    """A run stopped from the page after the first piece of its answer, the run over, and
    the page reloaded; yields that piece as ``shown`` shows it, and the event that lets the
    model's later answers go on."""
    going_on = threading.Event()  # the first answer waits after its first piece
    with served(chat_agent(script, going_on), front_end) as url:
        try:
            page.goto(url)
            page.wait_for_selector("#app[data-loading=false]")
            say(page, "Tell me a long story")
            page.locator(".msg.ai .text").wait_for()
            piece = shown(page)[-1]
            assert piece[0] == "ai" and script[0].result.output.text.startswith(piece[1])
            page.click("#stop")
            page.wait_for_selector("#app[data-loading=false]")
            api, thread = api_of(url), page.get_attribute("#app", "data-thread")
            (run,) = httpx.get(f"{api}/threads/{thread}/runs").json()
            httpx.get(f"{api}/threads/{thread}/runs/{run['run_id']}/join", timeout=10)
            ended = httpx.get(f"{api}/threads/{thread}/runs/{run['run_id']}").json()
            assert ended["status"] == "interrupted"  # LangGraph's word for cancelled
            page.reload()
            page.locator(".msg.ai .text").wait_for()
            page.wait_for_selector("#app[data-loading=false]")
            yield piece, going_on
        finally:
            going_on.set()


def test_stop_ends_the_run_and_what_was_streamed_stays_in_the_thread(
    front_end: Path, page: Any, tmp_path: Path
) -> None:
    """useStream's ``stop()`` aborts the stream; the server cancels the run
    (``on_disconnect: "cancel"``) and keeps the piece streamed so far in the thread, where
    the reloaded page reads it back; the thread goes on.

    (``stop()`` reads the thread at once, which may come before the server has seen the
    disconnect: the piece then leaves the screen until the thread is read again; hence the
    wait for the run's end and the reload.)"""
    script = [says("A long answer that is cut short."), says("Here is a short one.")]
    with stopped_mid_answer(front_end, page, script) as (piece, going_on):
        assert shown(page) == [("human", "Tell me a long story"), piece]
        screenshot(page, tmp_path, "usestream-stopped")
        going_on.set()
        say(page, "A short one, then")
        answered(page, "Here is a short one.")
        assert shown(page)[2:] == [("human", "A short one, then"), ("ai", "Here is a short one.")]
    assert page.errors == [] and page.refused == []


def test_a_stopped_thread_is_not_shown_as_paused_at_a_breakpoint(
    front_end: Path, page: Any
) -> None:
    with stopped_mid_answer(front_end, page, [says("A long answer that is cut short.")]):
        assert page.locator(".interrupt").count() == 0
