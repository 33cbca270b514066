"""No run, however it stops, leaves a thread a model provider would refuse: each cause against
a local OpenAI-compatible server that answers 400 to an unanswered tool call, as the real API
does."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checkpoint import CheckpointConflictError, SqliteSaver
from graph_agent import (
    AssistantMessage,
    DefaultToolExecutionExceptionProcessor,
    GraphResumeError,
    OpenAIChatModel,
    ReactAgent,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent.agent._unanswered import UNANSWERED_TEXT
from graph_agent.errors import ToolExecutionException
from hooks import HumanInTheLoopHook

ROOT = Path(__file__).resolve().parents[2]


class StrictServer:
    """An OpenAI-compatible chat server that enforces the tool-call rule and answers: a
    user message starting with "use " gets a call to that tool; anything else gets text."""

    def __init__(self) -> None:
        self.models: list[OpenAIChatModel] = []
        self.refused: list[str] = []
        self.answered = 0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, reply = server.answer(body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body["messages"]
        waiting: set[str] = set()
        for message in messages:
            if waiting and message["role"] != "tool":
                error = (
                    "An assistant message with 'tool_calls' must be followed by tool messages "
                    "responding to each 'tool_call_id'. The following tool_call_ids did not "
                    f"have response messages: {', '.join(sorted(waiting))}"
                )
                self.refused.append(error)
                return 400, {"error": {"message": error, "type": "invalid_request_error",
                                       "param": "messages", "code": None}}  # fmt: skip
            if message["role"] == "assistant":
                waiting = {c["id"] for c in message.get("tool_calls") or ()}
            elif message["role"] == "tool":
                waiting.discard(message["tool_call_id"])
        self.answered += 1
        last = messages[-1]
        reply: dict[str, Any] = {"role": "assistant", "content": f"answer {self.answered}"}
        if last["role"] == "user" and last["content"].startswith("use "):
            name = last["content"].split()[1]
            reply = {"role": "assistant", "content": "Let me check.", "tool_calls": [
                {"id": f"call_{self.answered}", "type": "function",
                 "function": {"name": name, "arguments": "{}"}}]}  # fmt: skip
        return 200, {"id": "c", "object": "chat.completion", "model": "m",
                     "choices": [{"index": 0, "message": reply, "finish_reason": "stop"}]}  # fmt: skip

    def close(self) -> None:
        for model in self.models:
            model.close()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[StrictServer]:
    strict = StrictServer()
    yield strict
    strict.close()


def model(server: StrictServer) -> OpenAIChatModel:
    made = OpenAIChatModel("m", server.url, "sk-test", max_retries=0)
    server.models.append(made)  # closed with the server; async runs close theirs in their loop
    return made


def config(thread: str = "t") -> dict[str, Any]:
    return {"thread_id": thread}


def assert_next_turn_is_accepted(
    agent: ReactAgent, server: StrictServer, thread: str = "t", note: bool | None = True
) -> None:
    """The next turn reaches the strict server and is answered; ``note``: the stopped call
    was answered with the "no result" note (True), or it may have finished first (None)."""
    answer = agent.call("and now?", config(thread))
    assert answer.text.startswith("answer"), answer
    assert server.refused == []
    messages = agent.get_state(config(thread)).values["messages"]
    notes = [
        m for m in messages if isinstance(m, ToolResponseMessage) and m.metadata.get("unanswered")
    ]
    if note:
        assert len(notes) == 1 and notes[0].responses[0].response_data == UNANSWERED_TEXT
    calls = [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    answered = [r.id for m in messages if isinstance(m, ToolResponseMessage) for r in m.responses]
    assert sorted(calls) == sorted(answered)  # each call answered once


def test_a_tool_that_raises_with_always_throw(server: StrictServer) -> None:
    @tool
    def boom() -> str:
        """Fails."""
        raise RuntimeError("disk full")

    agent = ReactAgent(
        name="a", model=model(server), tools=[boom],
        exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True),
    )  # fmt: skip
    with pytest.raises(ToolExecutionException, match="disk full"):
        agent.call("use boom", config())
    assert_next_turn_is_accepted(agent, server)


def test_ctrl_c_during_a_tool(server: StrictServer) -> None:
    @tool
    def slow() -> str:
        """Interrupted by the user."""
        raise KeyboardInterrupt

    agent = ReactAgent(name="a", model=model(server), tools=[slow])
    with pytest.raises(KeyboardInterrupt):
        agent.call("use slow", config())
    assert_next_turn_is_accepted(agent, server)


def test_a_cancelled_task(server: StrictServer) -> None:
    running = threading.Event()

    @tool
    async def wait() -> str:
        """Never finishes."""
        running.set()
        await asyncio.sleep(3600)
        return "late"

    agent = ReactAgent(name="a", model=model(server), tools=[wait])

    async def run() -> None:
        task = asyncio.ensure_future(agent.acall("use wait", config()))
        assert await asyncio.to_thread(running.wait, 10)  # cancelled while the tool runs
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await agent.model.aclose()  # type: ignore[attr-defined]

    asyncio.run(run())
    # the cancelled run answered the call itself ("cancelled"), before any new input
    answered = agent.get_state(config()).values["messages"][-1]
    assert isinstance(answered, ToolResponseMessage) and answered.metadata.get("cancelled")
    assert_next_turn_is_accepted(agent, server, note=False)


@pytest.mark.parametrize("view", ["stream_messages", "stream_events"])
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_an_abandoned_stream(server: StrictServer, view: str, asynchronous: bool) -> None:
    walked_away = threading.Event()  # set as the reader closes the stream

    @tool
    def lookup() -> str:
        """Looks something up, until the reader walked away."""
        assert walked_away.wait(10)
        return "found"

    agent = ReactAgent(name="a", model=model(server), tools=[lookup])

    def asked_for_tools(item: Any) -> bool:
        return item == "Let me check." or getattr(item, "kind", None) == "model_end"

    if asynchronous:

        async def run() -> None:
            stream = getattr(agent, f"a{view}")("use lookup", config())
            async for item in stream:
                if asked_for_tools(item):
                    break
            walked_away.set()
            await stream.aclose()
            await agent.model.aclose()  # type: ignore[attr-defined]

        asyncio.run(run())
    else:
        stream = getattr(agent, view)("use lookup", config())
        for item in stream:  # read until the model has asked for the tool
            if asked_for_tools(item):
                break
        walked_away.set()
        stream.close()  # the reader walks away: the run stops at a step boundary
    assert_next_turn_is_accepted(agent, server, note=None)


def test_a_conflicting_writer(server: StrictServer, tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    with SqliteSaver(path) as mine, SqliteSaver(path) as theirs:
        conflicting_writer(server, mine, theirs)


def conflicting_writer(server: StrictServer, mine: SqliteSaver, theirs: SqliteSaver) -> None:
    other = ReactAgent(name="a", model=model(server), saver=theirs)

    @tool
    def record() -> str:
        """Meanwhile another process writes the same thread."""
        other.update_state(config(), {"messages": [UserMessage("a note from elsewhere")]})
        return "recorded"

    agent = ReactAgent(name="a", model=model(server), tools=[record], saver=mine)
    with pytest.raises(CheckpointConflictError):
        agent.call("use record", config())
    messages = agent.get_state(config()).values["messages"]
    assert [type(m).__name__ for m in messages[-3:]] == [
        "AssistantMessage", "ToolResponseMessage", "UserMessage",
    ]  # fmt: skip
    assert_next_turn_is_accepted(agent, server)


WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from checkpoint import SqliteSaver
    from graph_agent import OpenAIChatModel, ReactAgent, tool

    url, path, marker = sys.argv[1:4]

    @tool
    def transfer() -> str:
        '''Moves money; the process is killed while it runs.'''
        Path(marker).write_text("running")
        time.sleep(3600)
        return "done"

    agent = ReactAgent(name="a", model=OpenAIChatModel("m", url, "sk-test", max_retries=0),
                       tools=[transfer], saver=SqliteSaver(path))
    agent.call("use transfer", {"thread_id": "t"})
    """
)


def test_a_killed_process(server: StrictServer, tmp_path: Path) -> None:
    path, marker = tmp_path / "threads.db", tmp_path / "running"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, server.url, str(path), str(marker)], env=env
    )
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert worker.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()

    @tool
    def transfer() -> str:
        """Moves money."""
        raise AssertionError("not run again by new input")

    with SqliteSaver(path) as saver:
        agent = ReactAgent(name="a", model=model(server), tools=[transfer], saver=saver)
        assert agent.get_state(config()).next == ("tools",)
        assert_next_turn_is_accepted(agent, server)


def test_update_state_with_tool_responses_first_keeps_them(server: StrictServer) -> None:
    @tool
    def boom() -> str:
        """Fails."""
        raise RuntimeError("no")

    agent = ReactAgent(
        name="a", model=model(server), tools=[boom],
        exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True),
    )  # fmt: skip
    with pytest.raises(ToolExecutionException):
        agent.call("use boom", config())
    call = agent.get_state(config()).values["messages"][-1].tool_calls[0]
    mine = ToolResponseMessage(
        responses=[ToolResponse(id=call.id, name="boom", response_data="ok")]
    )
    agent.update_state(config(), {"messages": [mine, UserMessage("thanks")]})
    messages = agent.get_state(config()).values["messages"]
    assert messages[-2] == mine and not any(
        isinstance(m, ToolResponseMessage) and m.metadata.get("unanswered") for m in messages
    )
    assert agent.call("next", config()).text.startswith("answer") and server.refused == []


def test_a_thread_paused_for_approval_says_how_to_resume(server: StrictServer) -> None:
    @tool
    def refund() -> str:
        """Gives money back."""
        return "refunded"

    agent = ReactAgent(
        name="a", model=model(server), tools=[refund], hooks=[HumanInTheLoopHook(["refund"])]
    )
    agent.invoke("use refund", config())
    with pytest.raises(GraphResumeError, match=r"resume it with invoke\(Command\(resume="):
        agent.call("forget it", config())
