"""``graph-agent chat`` against real things on loopback: no failure ends the conversation.

A model server that is down, one answering 401, Redis with a wrong password, unreachable or
going away mid-chat: each is one line on stderr (what, where, how to fix; no secret), and
the chat answers the next input. Tool calls show as they run, ``/history`` shows the
thread, and Ctrl-C (a real SIGINT to a real process) cancels the answer, not the chat.
"""

from __future__ import annotations

import io
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from graph_agent.cli import CliError, main
from graph_agent.cli._chat import ChatOptions, make_saver, run_chat
from tests._cli import (
    API_KEY,
    ERROR_PREFIX,
    FakeOpenAI,
    Handler,
    LiveChat,
    Reader,
    calls,
    cli_env,
    slowly,
    unauthorized,
)
from tests.redis_servers import free_port, redis_server


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
    def not_json(handler: Handler, body: dict[str, Any]) -> None:
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


# ``graph-agent chat`` as a terminal starts it: with Python's own SIGINT handler. A process
# inherits an ignored SIGINT, and tests run from a background job (``make test &``, CI) have
# it ignored: Python then sets no handler, and the chat, rightly, ignores Ctrl-C at its prompt.
# (``-X faulthandler``: on a hang, SIGABRT prints where each thread is.)
CHAT_AS_FROM_A_TERMINAL = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'graph-agent'; runpy.run_module('graph_agent.cli', run_name='__main__')"
)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
def test_ctrl_c_cancels_the_answer_not_the_chat(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.replies.append(slowly(words=400, delay=0.05))  # 20 s, unless cancelled
    env = cli_env(tmp_path, OPENAI_BASE_URL=fake_openai.url())
    process = subprocess.Popen(
        [
            sys.executable,
            "-X",
            "faulthandler",
            "-c",
            CHAT_AS_FROM_A_TERMINAL,
            "chat",
            "--saver",
            "memory",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None
    out, err = Reader(process.stdout), Reader(process.stderr)
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
        try:
            code = process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
            process.wait(timeout=30)
            err.thread.join(timeout=30)
            pytest.fail(f"the chat did not end on Ctrl-C at its prompt; it was at:\n{err.text}")
        assert code == 0
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


# A sync tool cannot be stopped: Ctrl-C while it runs stops the run once it returns. The chat
# says so at once, then says what the thread holds. The tools below return once their run is
# asked to stop (the event itself, read from the run's bus: test code may look inside), as a
# long tool would return after Ctrl-C.
SLOW_TOOL_APP = """
import os
import time
from pathlib import Path

from graph_agent import OpenAIChatModel, ReactAgent, tool
from graph_agent._runtime.task_scope import current_task

GATE = Path(os.environ["TOOL_GATE"])


def held(city: str) -> str:
    with (GATE / "runs").open("a") as runs:
        runs.write(city + "\\n")
    run = current_task.get().run
    while not run.bus.stop_requested:  # until Ctrl-C asks the run to stop
        time.sleep(0.01)
    return f"sunny in {city}"


@tool
def lookup(city: str) -> str:
    \"\"\"The weather in a city, from a slow service.\"\"\"
    return held(city)


@tool(return_direct=True)
def forecast(city: str) -> str:
    \"\"\"Tomorrow's weather in a city: the answer itself.\"\"\"
    return held(city)


agent = ReactAgent.builder().name("weather").model(OpenAIChatModel()).tools(lookup).build()
direct = ReactAgent.builder().name("weather").model(OpenAIChatModel()).tools(forecast).build()
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
def test_ctrl_c_during_a_sync_tool_stops_after_it_and_retry_answers(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.replies.append(calls(("lookup", {"city": "Oslo"})))
    app = tmp_path / "weather.py"
    app.write_text(SLOW_TOOL_APP)
    env = cli_env(tmp_path, OPENAI_BASE_URL=fake_openai.url(), TOOL_GATE=str(tmp_path))
    with terminal_chat(env, f"{app}:agent", "--saver", "memory") as chat:
        at = chat.out.wait_for("> ")
        chat.send("weather in Oslo?")
        at = chat.out.wait_for("  -> lookup(", at)  # the tool runs, held
        chat.process.send_signal(signal.SIGINT)
        at = chat.out.wait_for("[Ctrl-C: ", at)  # said at once, while the tool still runs
        at = chat.out.wait_for("[answer cancelled; /retry runs it again]\n> ", at)
        said = chat.out.text
        chat.send("/retry")
        at = chat.out.wait_for("\n> ", at)
        retried = chat.out.text[len(said) :]
        chat.send("/history")
        at = chat.out.wait_for("\n> ", at)
        history = chat.out.text[len(said) + len(retried) :]
        assert chat.end() == 0
    assert len(fake_openai.requests) == 2  # the tool call; the answer came only on /retry
    assert "you said 'weather in Oslo?'" in retried and "nothing to retry" not in retried
    assert (tmp_path / "runs").read_text() == "Oslo\n"  # the tool ran once
    tool_message = fake_openai.requests[1]["messages"][-1]
    assert (tool_message["role"], tool_message["content"]) == ("tool", "sunny in Oslo")
    assert history.count("user: weather in Oslo?") == 1
    assert history.count("  <- lookup: sunny in Oslo") == 1  # kept when the run stopped
    assert "Traceback" not in chat.err.text


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child needs POSIX")
def test_ctrl_c_during_a_tool_whose_result_is_the_answer_says_it_was_kept(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """The tool's step is the run's last: stopped once the tool returns, the run has
    finished and its answer is kept. The chat shows it and claims no cancel."""
    fake_openai.replies.append(calls(("forecast", {"city": "Oslo"})))
    app = tmp_path / "weather.py"
    app.write_text(SLOW_TOOL_APP)
    env = cli_env(tmp_path, OPENAI_BASE_URL=fake_openai.url(), TOOL_GATE=str(tmp_path))
    with terminal_chat(env, f"{app}:direct", "--saver", "memory") as chat:
        at = chat.out.wait_for("> ")
        chat.send("weather tomorrow in Oslo?")
        at = chat.out.wait_for("  -> forecast(", at)
        chat.process.send_signal(signal.SIGINT)
        at = chat.out.wait_for("[Ctrl-C: ", at)
        at = chat.out.wait_for("\n> ", at)
        said = chat.out.text
        chat.send("/retry")
        at = chat.out.wait_for("\n> ", at)
        retried = chat.out.text[len(said) :]
        assert chat.end() == 0
    assert said.endswith(
        "\nsunny in Oslo\n[Ctrl-C came as the answer was finished: it is kept, nothing to retry]\n> "
    )
    assert "cancelled" not in said
    assert "nothing to retry: the thread's last message was answered" in retried
    assert len(fake_openai.requests) == 1
    assert "Traceback" not in chat.err.text


def terminal_chat(env: dict[str, str], *args: str) -> LiveChat:
    """``graph-agent chat ARGS`` as a terminal starts it (``CHAT_AS_FROM_A_TERMINAL``)."""
    launcher = ("-X", "faulthandler", "-c", CHAT_AS_FROM_A_TERMINAL)
    return LiveChat(*args, env=env, launcher=launcher)
