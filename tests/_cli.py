"""What the chat CLI's tests share: a loopback OpenAI-compatible server (``FakeOpenAI``) and
``graph-agent chat`` as a real process (``cli_env``, ``run_cli``, ``LiveChat``)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
API_KEY = "sk-test-0123456789abcdef"  # what the 401 server echoes back, as OpenAI's does
ERROR_PREFIX = "graph-agent chat: error: "

Reply = Callable[["Handler", dict[str, Any]], None]


# -- a loopback OpenAI-compatible server -----------------------------------------------------


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    event = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(event)}\n\n".encode()


def echo(handler: Handler, body: dict[str, Any]) -> None:
    """Streams ``you said '<last user text>' (<n> messages from you)`` word by word."""
    said = [m["content"] for m in body["messages"] if m["role"] == "user"]
    words = f"you said {said[-1]!r} ({len(said)} messages from you)".split(" ")
    handler.stream(
        [_chunk({"content": w + " " * (i < len(words) - 1)}) for i, w in enumerate(words)]
    )


def unauthorized(handler: Handler, body: dict[str, Any]) -> None:
    """HTTP 401 in OpenAI's error format, echoing the key the request carried."""
    key = handler.headers.get("Authorization", "").removeprefix("Bearer ")
    error = {
        "error": {
            "message": f"Incorrect API key provided: {key}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
    handler.answer(401, json.dumps(error).encode(), "application/json")


def calls(*tool_calls: tuple[str, dict[str, Any]]) -> Reply:
    """A reply that streams tool calls (each in two fragments, as OpenAI does)."""

    def reply(handler: Handler, body: dict[str, Any]) -> None:
        chunks = [_chunk({"content": "Let me check."})]
        for index, (name, arguments) in enumerate(tool_calls):
            text = json.dumps(arguments)
            first = {"index": index, "id": f"call_{index}", "type": "function"}
            first["function"] = {"name": name, "arguments": text[:5]}
            chunks.append(_chunk({"tool_calls": [first]}))
            rest = {"index": index, "function": {"arguments": text[5:]}}
            chunks.append(_chunk({"tool_calls": [rest]}))
        chunks.append(_chunk({}, "tool_calls"))
        handler.stream(chunks, finish=None)

    return reply


def slowly(words: int, delay: float) -> Reply:
    """A long answer, one word every ``delay`` seconds: ``word0 word1 ...``."""

    def reply(handler: Handler, body: dict[str, Any]) -> None:
        handler.stream((_chunk({"content": f"word{i} "}) for i in range(words)), delay=delay)

    return reply


class Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.fake.requests.append(body)
        replies = self.server.fake.replies
        reply = replies.pop(0) if replies else echo
        with contextlib.suppress(OSError):  # the client hung up (Ctrl-C): nothing to add
            reply(self, body)

    def answer(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def stream(self, chunks: Any, *, finish: str | None = "stop", delay: float = 0.0) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)
            self.wfile.flush()
            if delay:
                time.sleep(delay)
        if finish:
            self.wfile.write(_chunk({}, finish))
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenAI


class FakeOpenAI:
    """An OpenAI-compatible ``/chat/completions`` on 127.0.0.1: ``replies`` are used in
    turn, then every request is echoed; ``requests`` keeps the bodies it got."""

    def __init__(self, port: int = 0) -> None:
        self.requests: list[dict[str, Any]] = []
        self.replies: list[Reply] = []
        self.server = _Server(("127.0.0.1", port), Handler)
        self.server.fake = self
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, userinfo: str = "") -> str:
        return f"http://{userinfo}127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


# -- `graph-agent chat` as a real process ---------------------------------------------------


def cli_env(home: Path, **settings: str) -> dict[str, str]:
    """The environment of a ``graph-agent`` process: no model settings of this machine (only
    ``settings``), ``HOME`` at ``home`` (the default saver's file goes there), and this
    checkout's package first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GRAPH_AGENT"))}
    env.update(PYTHONUNBUFFERED="1", HOME=str(home), **settings)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def run_cli(
    *args: str, input: str = "", env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m graph_agent.cli ARGS`` with ``input`` on stdin, to its end."""
    return subprocess.run(
        [sys.executable, "-m", "graph_agent.cli", *args],
        input=input,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


class LiveChat:
    """A ``graph-agent chat`` process fed a line at a time: ``say`` sends a line and waits
    for the next prompt; ``out`` and ``err`` collect what it printed. A context manager:
    the process is killed on the way out if it still runs."""

    def __init__(
        self,
        *args: str,
        env: dict[str, str],
        cwd: Path | None = None,
        launcher: Sequence[str] = ("-m", "graph_agent.cli"),
    ) -> None:
        self.process = subprocess.Popen(
            [sys.executable, *launcher, "chat", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.out, self.err = Reader(self.process.stdout), Reader(self.process.stderr)
        self.at = self.out.wait_for("> ")

    def send(self, line: str) -> None:
        """Send ``line`` (and wait for nothing)."""
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def say(self, line: str) -> str:
        """Send ``line``; what the chat printed on stdout until its next prompt."""
        self.send(line)
        start, self.at = self.at, self.out.wait_for_prompt(self.at)
        return self.out.text[start : self.at]

    def end(self) -> int:
        """Close stdin (Ctrl-D); the exit code."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=60)

    def __enter__(self) -> LiveChat:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for reader in (self.out, self.err):
            reader.thread.join(timeout=60)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


class Reader:
    """Collects a pipe's text on a thread; ``wait_for`` blocks until some text arrived."""

    def __init__(self, pipe: Any) -> None:
        self.text = ""
        self._changed = threading.Condition()
        self.thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self.thread.start()

    def _read(self, pipe: Any) -> None:
        for chunk in iter(lambda: pipe.read1(4096), b""):
            with self._changed:
                self.text += chunk.decode()
                self._changed.notify_all()

    def wait_for_prompt(self, start: int, timeout: float = 60.0) -> int:
        """The end of the text once more came after ``start`` and it ends with the prompt
        (the chat waits for input); fails after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.text) <= start or not self.text.endswith("> "):
                left = deadline - time.monotonic()
                assert left > 0, f"no prompt after {start} in the output:\n{self.text}"
                self._changed.wait(left)
            return len(self.text)

    def wait_for(self, fragment: str, start: int = 0, timeout: float = 60.0) -> int:
        """Where ``fragment`` appears after ``start``; fails after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while (found := self.text.find(fragment, start)) < 0:
                left = deadline - time.monotonic()
                assert left > 0, f"no {fragment!r} in the output:\n{self.text}"
                self._changed.wait(left)
        return found + len(fragment)
