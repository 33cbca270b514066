"""``graph-agent chat`` against real things on loopback: no failure ends the conversation.

A model server that is down, one answering 401, Redis with a wrong password, unreachable or
going away mid-chat: each is one line on stderr (what, where, how to fix; no secret), and
the chat answers the next input. Tool calls show as they run, ``/history`` shows the
thread, and Ctrl-C (a real SIGINT to a real process) cancels the answer, not the chat.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from graph_agent._cli_chat import ChatOptions, make_saver, run_chat
from graph_agent.cli import CliError, main
from tests.redis_servers import free_port, redis_server

ROOT = Path(__file__).resolve().parents[1]
API_KEY = "sk-test-0123456789abcdef"  # what the 401 server echoes back, as OpenAI's does
ERROR_PREFIX = "graph-agent chat: error: "

Reply = Callable[["_Handler", dict[str, Any]], None]


# -- a loopback OpenAI-compatible server -----------------------------------------------------


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    event = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(event)}\n\n".encode()


def echo(handler: _Handler, body: dict[str, Any]) -> None:
    """Streams ``you said '<last user text>' (<n> messages from you)`` word by word."""
    said = [m["content"] for m in body["messages"] if m["role"] == "user"]
    words = f"you said {said[-1]!r} ({len(said)} messages from you)".split(" ")
    handler.stream(
        [_chunk({"content": w + " " * (i < len(words) - 1)}) for i, w in enumerate(words)]
    )


def unauthorized(handler: _Handler, body: dict[str, Any]) -> None:
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

    def reply(handler: _Handler, body: dict[str, Any]) -> None:
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

    def reply(handler: _Handler, body: dict[str, Any]) -> None:
        handler.stream((_chunk({"content": f"word{i} "}) for i in range(words)), delay=delay)

    return reply


class _Handler(BaseHTTPRequestHandler):
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
        self.server = _Server(("127.0.0.1", port), _Handler)
        self.server.fake = self
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, userinfo: str = "") -> str:
        return f"http://{userinfo}127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GRAPH_AGENT_MODEL", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url())
    try:
        yield fake
    finally:
        fake.stop()


def chat(lines: list[str | Callable[[], str]], saver: str = "memory") -> tuple[int, str, str]:
    """Run ``run_chat`` in this process on ``lines`` (a callable is called for its line,
    after what it does); the exit code, stdout and stderr."""
    pending = list(lines)

    def read() -> str:
        if not pending:
            raise EOFError
        line = pending.pop(0)
        return line() if callable(line) else line

    out, err = io.StringIO(), io.StringIO()
    code = run_chat(ChatOptions(thread="t", saver=saver), read, out, err)
    return code, out.getvalue(), err.getvalue()


def one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(ERROR_PREFIX) and "Traceback" not in err
    return lines[0]


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

    def __init__(self, *args: str, env: dict[str, str], cwd: Path | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "graph_agent.cli", "chat", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.out, self.err = _Reader(self.process.stdout), _Reader(self.process.stderr)
        self.at = self.out.wait_for("> ")

    def say(self, line: str) -> str:
        """Send ``line``; what the chat printed on stdout until its next prompt."""
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()
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


# -- the model failing ---------------------------------------------------------------------


def test_model_server_down_is_one_line_and_retry_answers_once_it_is_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port = free_port()  # nothing listens there: connection refused
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://ada:hunter22@127.0.0.1:{port}/v1")
    servers: list[FakeOpenAI] = []

    def start_server() -> str:
        servers.append(FakeOpenAI(port))
        return "/retry"

    try:
        code, out, err = chat(["hello", start_server, "/retry", "and again", "/exit"])
    finally:
        for server in servers:
            server.stop()
    assert code == 0
    line = one_error_line(err)
    assert "cannot reach the model server" in line and "Connection refused" in line
    assert f"127.0.0.1:{port}/v1" in line and "OPENAI_BASE_URL" in line
    assert "hunter22" not in err + out and "ada:***@" in line
    assert "you said 'hello' (1 messages from you)" in out  # /retry sent the kept message
    assert "nothing to retry" in out
    assert "you said 'and again' (2 messages from you)" in out


def test_http_401_is_one_line_without_the_key_and_the_chat_goes_on(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    fake_openai.replies.append(unauthorized)
    code, out, err = chat(["hello", "hello again", "/exit"])
    assert code == 0
    line = one_error_line(err)
    assert "rejected the API key" in line and "HTTP 401" in line and "OPENAI_API_KEY" in line
    assert f"127.0.0.1:{fake_openai.port}" in line and "Incorrect API key provided: ***" in line
    assert API_KEY not in out + err
    assert "you said 'hello again' (2 messages from you)" in out
    assert len(fake_openai.requests) == 2  # a 401 is not retried


def test_an_unexpected_failure_is_one_line_too(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    def not_json(handler: _Handler, body: dict[str, Any]) -> None:
        handler.stream([b"data: {not json\n\n"])

    fake_openai.replies.append(not_json)
    code, out, err = chat(["hello", "again", "/exit"])
    assert code == 0
    assert "the model call failed" in one_error_line(err)
    assert "you said 'again'" in out


# -- Redis as the store --------------------------------------------------------------------


@pytest.fixture(scope="module")
def redis_with_password(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with redis_server(tmp_path_factory.mktemp("redis-auth"), "--requirepass", "s3cret-pw") as port:
        yield port


@pytest.mark.parametrize("userinfo", [":wrong-pw@", ""], ids=["wrong-password", "no-password"])
def test_redis_login_failure_is_one_line_and_exit_2(
    redis_with_password: int,
    fake_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
    userinfo: str,
) -> None:
    url = f"redis://{userinfo}127.0.0.1:{redis_with_password}/0"
    assert main(["chat", "--saver", url]) == 2
    out, err = capsys.readouterr()
    line = one_error_line(err)
    assert f"127.0.0.1:{redis_with_password}/0" in line and "redis://:PASSWORD@" in line
    assert ("refused the password" if userinfo else "needs a password") in line
    assert "wrong-pw" not in out + err
    assert fake_openai.requests == []


def test_redis_with_the_right_password_masks_it_everywhere(
    redis_with_password: int, fake_openai: FakeOpenAI
) -> None:
    url = f"redis://:s3cret-pw@127.0.0.1:{redis_with_password}/0"
    code, out, err = chat(["hello", "/history"], saver=url)
    assert (code, err) == (0, "")
    assert f"kept in redis://:***@127.0.0.1:{redis_with_password}/0" in out
    assert "you said 'hello'" in out and "user: hello" in out
    assert "s3cret-pw" not in out


def test_unreachable_redis_is_one_line_and_exit_2(
    fake_openai: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    assert main(["chat", "--saver", f"redis://:pw-12345@127.0.0.1:{port}/0"]) == 2
    out, err = capsys.readouterr()
    line = one_error_line(err)
    assert "cannot reach Redis" in line and f"127.0.0.1:{port}/0" in line
    assert "pw-12345" not in out + err and "redis://:***@" in line


def test_redis_going_away_mid_chat_keeps_the_chat_open(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    with ExitStack() as servers:
        servers.enter_context(redis_server(tmp_path / "first", port=port))

        def stop() -> str:
            servers.close()  # Redis goes away
            return "are you there?"

        def restart() -> str:
            servers.enter_context(redis_server(tmp_path / "second", port=port))
            return "back again"

        code, out, err = chat(["hello", stop, "/history", restart, "/exit"], saver=url)
    assert code == 0
    lines = err.splitlines()
    assert len(lines) == 2 and all(line.startswith(ERROR_PREFIX) for line in lines), err
    assert all(f"cannot reach Redis at {url}" in line for line in lines)  # the turn, /history
    assert "Traceback" not in err
    assert "you said 'hello'" in out and "you said 'back again'" in out


def test_bad_saver_specs_are_errors_without_the_password() -> None:
    with pytest.raises(CliError, match="--saver must be memory") as bad:
        make_saver("postgres://bob:pg-secret@db/x")
    assert "pg-secret" not in str(bad.value) and "bob:***@" in str(bad.value)
    with pytest.raises(CliError, match="not a Redis URL that works") as bad:
        make_saver("redis://:rd-secret@127.0.0.1:notaport/0")
    assert "rd-secret" not in str(bad.value)


def test_usage_errors_and_help_print_no_password(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", "app.py:agent", "redis://:pw-in-argv@127.0.0.1:1/0"]) == 2
    out, err = capsys.readouterr()
    assert "unrecognized arguments: redis://:***@127.0.0.1:1/0" in err
    assert "pw-in-argv" not in out + err
    assert main(["chat", "--saver", "memory", "redis://:pw-in-argv@127.0.0.1:1/0"]) == 2
    out, err = capsys.readouterr()
    assert (
        "got the URL 'redis://:***@127.0.0.1:1/0' (a conversation store goes after --saver)" in err
    )
    assert "pw-in-argv" not in out + err and len(err.splitlines()) == 1
    assert main(["chat", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the help
    assert "default: sqlite:~/.graph-agent/chat.sqlite" in text and "/history" in text


# -- what a turn shows ---------------------------------------------------------------------


def test_tool_calls_show_as_they_run(fake_openai: FakeOpenAI) -> None:
    fake_openai.replies.append(calls(("current_time", {}), ("get_weather", {"city": "Paris"})))
    code, out, err = chat(["what time is it?", "/exit"])
    assert (code, err) == (0, "")
    lines = out.splitlines()
    first, answer = (
        lines.index("Let me check."),
        lines.index("you said 'what time is it?' (1 messages from you)"),
    )
    shown = lines[first + 1 : answer]  # parallel tools: their lines may interleave
    assert "  -> current_time({})" in shown and '  -> get_weather({"city": "Paris"})' in shown
    assert shown.index("  -> current_time({})") < min(
        i for i, line in enumerate(shown) if line.startswith("  <- current_time: 20")
    )
    assert any(line.startswith("  <- current_time: 20") for line in lines)
    assert "  <- get_weather failed: LookupError: unknown tool 'get_weather'" in shown


def test_long_tool_arguments_are_shortened(fake_openai: FakeOpenAI) -> None:
    fake_openai.replies.append(calls(("current_time", {"note": "x" * 1000})))
    code, out, _ = chat(["time?", "/exit"])
    assert code == 0
    (line,) = [line for line in out.splitlines() if line.startswith("  -> current_time(")]
    assert line.endswith("...)") and len(line) < 200


def test_history_shows_roles_text_tool_calls_and_results(fake_openai: FakeOpenAI) -> None:
    fake_openai.replies.append(calls(("current_time", {})))
    code, out, _ = chat(["/history", "what time is it?", "thanks", "/history"])
    assert code == 0
    assert "(thread 't' has no messages yet)" in out
    history = out[out.rindex("user: what time is it?") :].splitlines()
    assert history[0:3] == [
        "user: what time is it?",
        "assistant: Let me check.",
        "  -> current_time({})",
    ]
    assert history[3].startswith("  <- current_time: 20")
    assert history[4:7] == [
        "assistant: you said 'what time is it?' (1 messages from you)",
        "user: thanks",
        "assistant: you said 'thanks' (2 messages from you)",
    ]


def test_help_lists_the_commands(fake_openai: FakeOpenAI) -> None:
    _, out, _ = chat(["/help"])
    assert "/history" in out and "/retry" in out and "Ctrl-C" in out


# -- Ctrl-C, for real --------------------------------------------------------------------


class _Reader:
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


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
def test_ctrl_c_cancels_the_answer_not_the_chat(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.replies.append(slowly(words=400, delay=0.05))  # 20 s, unless cancelled
    env = cli_env(tmp_path, OPENAI_BASE_URL=fake_openai.url())
    process = subprocess.Popen(
        [sys.executable, "-m", "graph_agent.cli", "chat", "--saver", "memory"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None
    out, err = _Reader(process.stdout), _Reader(process.stderr)
    try:
        at = out.wait_for("> ")
        process.stdin.write(b"tell me a long story\n")
        process.stdin.flush()
        at = out.wait_for("word3 ", at)  # the answer is being written
        process.send_signal(signal.SIGINT)
        at = out.wait_for("[answer cancelled; /retry runs it again]\n> ", at)
        process.stdin.write(b"/retry\n")  # the message was kept: it runs again
        process.stdin.flush()
        at = out.wait_for("you said 'tell me a long story' (1 messages from you)\n> ", at)
        process.stdin.write(b"and now?\n")
        process.stdin.flush()
        at = out.wait_for("you said 'and now?' (2 messages from you)\n> ", at)
        process.send_signal(signal.SIGINT)  # at the empty prompt: the chat ends
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for reader in (out, err):
            reader.thread.join(timeout=60)  # the pipes are at their end: the process exited
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    assert "word399" not in out.text
    assert "Traceback" not in err.text and "KeyboardInterrupt" not in err.text
    assert len(fake_openai.requests) == 3
