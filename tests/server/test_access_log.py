"""Logs an operator can use: one access-log line per request (``METHOD PATH STATUS TIME ms``
on ``graph_agent.server.access``, shown by ``graph-agent serve`` unless
``--no-access-log``); a run that failed on what its client sent is one line at WARNING, a
run that failed on a bug keeps its traceback at ERROR."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
import httpx
from langgraph_sdk import get_sync_client

from checkpoint import MemorySaver
from graph_agent import (
    END,
    START,
    AssistantMessage,
    ReactAgent,
    ScriptedChatModel,
    StateGraph,
    ToolCall,
    tool,
)
from graph_agent.server import create_app
from hooks import HumanInTheLoopHook
from tests._cli import cli_env
from tests.redis_servers import free_port

from .conftest import live_server, serve_process, stop_process

LINE = re.compile(r"(?P<method>[A-Z]+) (?P<path>\S+) (?P<status>\d{3}) (?P<ms>\d+\.\d) ms")


class Lines(logging.Handler):
    """The records of a logger, as they come (from the server's thread); ``wait(n)`` returns
    once ``n`` have come."""

    def __init__(self, name: str) -> None:
        super().__init__(logging.DEBUG)
        self.logger = logging.getLogger(name)
        self.records: list[logging.LogRecord] = []
        self._came = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self._came:
            self.records.append(record)
            self._came.notify_all()

    def wait(self, count: int, timeout: float = 10.0) -> list[logging.LogRecord]:
        with self._came:
            assert self._came.wait_for(lambda: len(self.records) >= count, timeout), [
                r.getMessage() for r in self.records
            ]
            return list(self.records)

    def __enter__(self) -> Lines:
        self.level_before = self.logger.level
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.logger.removeHandler(self)
        self.logger.setLevel(self.level_before)


def failing(state: Any) -> dict[str, Any]:
    raise ZeroDivisionError("a bug in the served code")


@tool
def send_payment(to: str) -> str:
    """Send money."""
    return f"sent to {to}"


def served() -> dict[str, Any]:
    graph = StateGraph()
    graph.add_node("divide", failing)
    graph.add_edge(START, "divide")
    graph.add_edge("divide", END)
    asks = AssistantMessage(
        "", tool_calls=[ToolCall(id="call_pay", name="send_payment", arguments='{"to": "Al"}')]
    )
    payments = ReactAgent(
        name="payments",
        model=ScriptedChatModel([asks, "done"] * 3),
        tools=[send_payment],
        hooks=[HumanInTheLoopHook(["send_payment"])],
        saver=MemorySaver(),
    )
    return {"buggy": graph.compile(saver=MemorySaver()), "payments": payments}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with live_server(create_app(served())) as base:
        yield base


def test_one_line_per_request_with_method_path_status_and_time(url: str) -> None:
    with Lines("graph_agent.server.access") as lines:
        assert httpx.get(f"{url}/ok").status_code == 200
        assert httpx.get(f"{url}/threads/nope?limit=1").status_code == 404
        with get_sync_client(url=url) as client:
            thread = client.threads.create()["thread_id"]
            parts = list(client.runs.stream(thread, "buggy", input={"x": 1}))
        assert parts[-1].event == "error"
        records = lines.wait(4)
    assert all(r.levelno == logging.INFO for r in records)
    seen = [LINE.fullmatch(r.getMessage()) for r in records]
    assert all(seen), [r.getMessage() for r in records]
    assert sorted((m["method"], m["path"], m["status"]) for m in seen if m) == sorted(
        [
            ("GET", "/ok", "200"),
            ("GET", "/threads/nope", "404"),  # the path only: no query string
            ("POST", "/threads", "200"),
            ("POST", f"/threads/{thread}/runs/stream", "200"),  # once the stream has ended
        ]
    )


def test_a_client_s_mistake_is_one_line_a_bug_keeps_its_traceback(url: str) -> None:
    with Lines("graph_agent.server") as lines, get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        paused = client.runs.wait(
            thread, "payments", input={"messages": [{"role": "user", "content": "pay Al"}]}
        )
        assert isinstance(paused, dict) and "__interrupt__" in paused
        # answers to pauses the thread does not have (a wrongly shaped approval is a 422
        # before any run: tests/server/test_hitl_shapes.py)
        for stale in (
            "00000000-0000-0000-0000-000000000000",
            "00000000-0000-0000-0000-000000000001",
        ):
            answer = client.runs.wait(
                thread, "payments", command={"resume": {stale: "yes"}}, raise_error=False
            )
            assert isinstance(answer, dict) and answer["__error__"]["error"] == "GraphResumeError"
        other = client.threads.create()["thread_id"]
        client.runs.wait(other, "buggy", input={"x": 1}, raise_error=False)
        mistakes = [r for r in lines.wait(3) if r.name == "graph_agent.server"]
    first, second, bug = mistakes
    for record in (first, second):
        assert record.levelno == logging.WARNING and record.exc_info is None
        assert "\n" not in record.getMessage()
        assert f"on thread {thread} failed on what its client sent: GraphResumeError: " in (
            record.getMessage()
        )
    assert "has no pending interrupt '00000000-0000-0000-0000-000000000000'" in (first.getMessage())
    assert bug.levelno == logging.ERROR and bug.exc_info is not None
    assert bug.getMessage().endswith(f"on thread {other} failed")


def test_graph_agent_serve_shows_the_access_log_unless_told_not_to(tmp_path: Path) -> None:
    module = tmp_path / "app.py"
    module.write_text(
        "from graph_agent import ReactAgent, ScriptedChatModel\n"
        "agent = ReactAgent(name='helper', model=ScriptedChatModel(['hi']))\n"
    )
    port = free_port()
    process = serve_process(module, tmp_path / "threads.sqlite", port)
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/threads/nope").status_code == 404
    finally:
        log = stop_process(process)
    assert re.search(r"^graph-agent serve: INFO GET /threads/nope 404 \d+\.\d ms$", log, re.M), log

    port = free_port()
    quiet = subprocess.Popen(
        [sys.executable, "-m", "graph_agent.cli", "serve", f"{module}:agent", "--port",
         str(port), "--saver", "memory", "--no-access-log"],
        env=cli_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            assert quiet.poll() is None and time.monotonic() < deadline
            try:
                httpx.get(f"http://127.0.0.1:{port}/threads/nope", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.05)
    finally:
        log = stop_process(quiet)
    assert log.startswith("serving helper on "), log
    assert " GET " not in log and "404" not in log
