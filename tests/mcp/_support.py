"""What the MCP tests share: the test server (tests/mcp/_server.py) over stdio or HTTP, and
scripting tool calls."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graph_agent import AssistantMessage, ToolCall, ToolResponseMessage
from graph_agent.mcp import McpToolProvider, StdioServer
from tests.redis_servers import free_port

SERVER = str(Path(__file__).with_name("_server.py"))


def stdio(**kw: Any) -> StdioServer:
    """The test server over stdio."""
    return StdioServer(sys.executable, [SERVER], **kw)


def slow_started(marks: Path) -> StdioServer:
    """The test server over stdio, its ``slow`` tool adding a line to ``marks`` once a call
    is running (``wait_for_lines`` waits for it)."""
    return stdio(env={"WEATHER_SLOW_STARTED": str(marks)})


def wait_for_lines(marks: Path, count: int = 1, timeout: float = 20) -> None:
    """Until ``marks`` has ``count`` lines (a poll of the event itself, not a guess at a time)."""
    deadline = time.monotonic() + timeout
    while not (marks.is_file() and len(marks.read_text().splitlines()) >= count):
        assert time.monotonic() < deadline, f"{marks} never got {count} line(s)"
        time.sleep(0.01)


@contextlib.contextmanager
def session_ends() -> Iterator[threading.Event]:
    """An event set once graph_agent.mcp says a server's session ended (its DEBUG line), i.e.
    the provider has found the server gone and knows why."""
    ended = threading.Event()

    class _Ended(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "session ended" in record.getMessage():
                ended.set()

    logger = logging.getLogger("graph_agent.mcp")
    handler, level = _Ended(logging.DEBUG), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield ended
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@contextlib.contextmanager
def http_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The test server over streamable HTTP on a free loopback port: its URL and process."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the HTTP MCP server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> AssistantMessage:
    """A model turn calling these tools, with ids call_0, call_1, ..."""
    return AssistantMessage(
        "",
        tool_calls=tuple(
            ToolCall(id=f"call_{i}", name=name, arguments=json.dumps(args))
            for i, (name, args) in enumerate(calls)
        ),
    )


def answers(messages: Any) -> dict[str, str]:
    """The tool responses of a conversation, by call id."""
    return {
        r.id: r.response_data
        for m in messages
        if isinstance(m, ToolResponseMessage)
        for r in m.responses
    }


def wire(model: Any) -> dict[str, Any]:
    """An SDK model (a tool, a tool result) as its JSON on the wire: the same keys with either
    major of the SDK (``inputSchema``; 2.x names the Python field ``input_schema``)."""
    dumped: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def tools_of(provider: McpToolProvider) -> dict[str, Any]:
    """The provider's tools, by name."""
    return {t.tool_definition.name: t for t in provider.get_tool_callbacks()}
