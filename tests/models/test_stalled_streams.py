"""A stream that stops bringing chunks fails after ``stream_idle_timeout``, against a real
local HTTP server that stalls (sending nothing, or only keep-alive comments)."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from graph_agent.errors import ModelError
from graph_agent.models import Prompt
from graph_agent.models.openai import OpenAIChatModel

FIRST = {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hel"}}]}


def _handler(keep_alive: bool, stop: threading.Event) -> type[http.server.BaseHTTPRequestHandler]:
    class Stalling(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._send(f"data: {json.dumps(FIRST)}\n\n".encode())
            try:
                while not stop.wait(0.05):  # the answer never comes
                    if keep_alive:
                        self._send(b": keep-alive\n\n")
            except OSError:
                pass  # the client gave up

        def _send(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def log_message(self, *args: Any) -> None:
            pass

    return Stalling


@pytest.fixture(params=[False, True], ids=["silent", "keep-alive"])
def stalling_url(request: pytest.FixtureRequest) -> Iterator[str]:
    stop = threading.Event()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(request.param, stop))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_stalled_stream_fails_after_the_idle_deadline(
    stalling_url: str, asynchronous: bool
) -> None:
    model = OpenAIChatModel(
        "m", stalling_url, "sk-test", timeout=8.0, stream_idle_timeout=0.4, max_retries=0
    )
    got: list[str] = []
    started = time.monotonic()
    with pytest.raises(ModelError) as caught:
        if asynchronous:

            async def run() -> None:
                async with model:
                    async for chunk in model.astream(Prompt("hi")):
                        got.append(chunk.text)

            asyncio.run(run())
        else:
            for chunk in model.stream(Prompt("hi")):
                got.append(chunk.text)
    elapsed = time.monotonic() - started
    assert got == ["Hel"]  # what came before the stall is delivered
    assert 0.3 < elapsed < 4, elapsed  # the 8 s client timeout did not decide
    message = str(caught.value).lower()
    assert "stall" in message or "timed out" in message or "timeout" in message
    model.close()


def test_the_idle_deadline_is_checked() -> None:
    with pytest.raises(ValueError, match="stream_idle_timeout"):
        OpenAIChatModel(api_key="sk-test", stream_idle_timeout=0)
