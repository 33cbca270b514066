"""``graph-agent demo`` and ``graph-agent chat``."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from graph_agent.cli import CliError, main
from graph_agent.cli._chat import ChatOptions, make_saver, run_chat
from graph_agent.cli._demo import run_demo


def test_demo_shows_tools_a_hook_memory_and_the_graph(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "[model] the model asks for get_weather" in out and "convert_currency" in out
    assert "[tools] get_weather -> sunny, 24°C" in out
    assert "[tools] convert_currency -> 184.00 EUR" in out
    assert "assistant: Lisbon is sunny, 24°C today, and 200 USD is about 184.00 EUR." in out
    assert "tools_used=['get_weather', 'convert_currency']" in out
    assert "assistant: Earlier you asked: \"I'm flying to Lisbon" in out
    assert "flowchart TD" in out and "ToolLog_after_model" in out


def test_chat_without_a_model_says_which_variables_to_set(monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert main(["chat", "--thread", "t"]) == 2
    err = capsys.readouterr().err
    assert "no model configured" in err and "OPENAI_API_KEY" in err and "OPENAI_BASE_URL" in err


def test_saver_choices(tmp_path):
    assert type(make_saver("memory")).__name__ == "MemorySaver"
    sqlite = make_saver(f"sqlite:{tmp_path / 'chat.sqlite'}")
    sqlite.close()
    assert type(sqlite).__name__ == "SqliteSaver"
    assert type(make_saver("redis://127.0.0.1:1/0")).__name__ == "RedisSaver"  # connects lazily
    with pytest.raises(CliError, match="--saver must be memory"):
        make_saver("postgres://x")


class _FakeOpenAI(BaseHTTPRequestHandler):
    """A local OpenAI-compatible server that streams back what it was told, word by word."""

    requests: list[dict] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append(body)
        said = [m["content"] for m in body["messages"] if m["role"] == "user"]
        words = f"you said {said[-1]!r} ({len(said)} messages from you)".split(" ")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i, word in enumerate(words):
            chunk = {
                "choices": [
                    {"index": 0, "delta": {"content": word + (" " if i < len(words) - 1 else "")}}
                ]
            }
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def openai_server(monkeypatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    _FakeOpenAI.requests = []
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()


def test_chat_streams_answers_and_remembers_the_thread(openai_server):
    lines = iter(["hello", "", "and again", "/exit"])
    out = io.StringIO()
    assert run_chat(ChatOptions(thread="t1", saver="memory"), lambda: next(lines), out) == 0
    text = out.getvalue()
    assert f"at {openai_server}" in text and "thread 't1'" in text
    assert "you said 'hello' (1 messages from you)" in text
    assert "you said 'and again' (2 messages from you)" in text  # the thread remembered
    assert _FakeOpenAI.requests[0]["stream"] is True
    assert _FakeOpenAI.requests[0]["messages"][0]["role"] == "system"
    assert [t["function"]["name"] for t in _FakeOpenAI.requests[0]["tools"]] == ["current_time"]


def test_chat_on_sqlite_continues_after_a_restart(openai_server, tmp_path):
    spec = f"sqlite:{tmp_path / 'chat.sqlite'}"
    first = iter(["hello", "/quit"])
    assert run_chat(ChatOptions(thread="kept", saver=spec), lambda: next(first), io.StringIO()) == 0
    second, out = iter(["still there?", "/quit"]), io.StringIO()
    assert run_chat(ChatOptions(thread="kept", saver=spec), lambda: next(second), out) == 0
    assert "(2 messages from you)" in out.getvalue()


def test_chat_ends_on_end_of_input(openai_server):
    def read() -> str:
        raise EOFError

    assert run_chat(ChatOptions(thread="t2", saver="memory"), read, io.StringIO()) == 0


def test_demo_runs_through_run_demo_too():
    out = io.StringIO()
    assert run_demo(out) == 0 and "Earlier you asked" in out.getvalue()


def test_chat_keeps_threads_in_sqlite_by_default(openai_server, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr("sys.stdin", io.StringIO("hello\n"))
    assert main(["chat", "--thread", "home"]) == 0
    assert (tmp_path / ".graph-agent" / "chat.sqlite").is_file()
    assert "you said 'hello'" in capsys.readouterr().out


class _Refusing(BaseHTTPRequestHandler):
    """A server whose model refuses, streaming ``delta.refusal`` as OpenAI does."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for piece in ["I'm sorry, ", "I can't help with that."]:
            chunk = {"choices": [{"index": 0, "delta": {"content": None, "refusal": piece}}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())

    def log_message(self, *args: object) -> None:
        pass


def test_chat_shows_a_refusal_instead_of_an_empty_answer(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv(
        "OPENAI_BASE_URL", f"http://user:s3cret@127.0.0.1:{server.server_address[1]}/v1"
    )
    try:
        lines, out = iter(["how do I pick a lock?", "/exit"]), io.StringIO()
        assert run_chat(ChatOptions(thread="r", saver="memory"), lambda: next(lines), out) == 0
    finally:
        server.shutdown()
        server.server_close()
    text = out.getvalue()
    assert "I'm sorry, I can't help with that." in text
    assert "s3cret" not in text and "user:***@" in text
