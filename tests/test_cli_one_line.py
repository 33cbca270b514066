"""``graph-agent chat`` as a real process: one line on stderr per failure, nothing else.

The library's loggers print nothing unless the application configures logging (their
NullHandler), so the saver's and the model's retry warnings ("retry 1 of 3 ...") never
reach the terminal; the chat says what failed once. A Redis that wants a password is our
own sentence, not Redis's text.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests._cli import ERROR_PREFIX, FakeOpenAI, LiveChat, cli_env, run_cli
from tests.redis_servers import free_port, redis_server

PASSWORD = "cli-Pa55word"


def test_redis_going_away_mid_chat_is_one_line_and_the_chat_goes_on(
    fake_model: FakeOpenAI, tmp_path: Path
) -> None:
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    env = cli_env(tmp_path, OPENAI_BASE_URL=fake_model.url())
    with ExitStack() as first, ExitStack() as process:
        first.enter_context(redis_server(tmp_path / "first", port=port))
        chat = process.enter_context(LiveChat("--saver", url, env=env))
        assert "you said 'hello' (1 messages from you)" in chat.say("hello")
        first.close()  # Redis goes away (SIGTERM, waited for)
        shown = chat.say("are you there?")
        chat.err.wait_for("\n")  # printed before the prompt, but read by another thread
        (line,) = chat.err.text.splitlines()  # the saver retried, and said nothing
        assert line.startswith(f"{ERROR_PREFIX}cannot reach Redis at {url}"), line
        assert "retry 1 of" not in chat.err.text and "Traceback" not in chat.err.text
        assert "you said" not in shown
        with redis_server(tmp_path / "second", port=port):  # back, empty: the chat goes on
            assert "you said 'back again' (1 messages from you)" in chat.say("back again")
            assert chat.end() == 0
        chat.close()  # its pipes read to their end
    assert len(chat.err.text.splitlines()) == 1, chat.err.text


def test_a_model_server_that_is_down_is_one_line(tmp_path: Path) -> None:
    env = cli_env(tmp_path, OPENAI_BASE_URL=f"http://127.0.0.1:{free_port()}/v1")
    done = run_cli("chat", "--saver", "memory", input="hello\n/help\n", env=env)
    assert done.returncode == 0, done.stderr
    (line,) = done.stderr.splitlines()  # the model's two retries print nothing
    assert line.startswith(f"{ERROR_PREFIX}cannot reach the model server")
    assert "/history" in done.stdout  # /help: the chat went on


@pytest.fixture(scope="module")
def locked_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with redis_server(tmp_path_factory.mktemp("locked"), "--requirepass", PASSWORD) as port:
        yield port


@pytest.mark.parametrize(
    ("userinfo", "said"),
    [
        ("", "needs a password: put it in the URL"),
        (":wrong-pw@", "refused the password in the URL: put the right one in it"),
    ],
    ids=["none", "wrong"],
)
def test_a_redis_password_missing_or_wrong_is_our_sentence(
    locked_redis: int, tmp_path: Path, userinfo: str, said: str
) -> None:
    env = cli_env(tmp_path, OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    url = f"redis://{userinfo}127.0.0.1:{locked_redis}"
    done = run_cli("chat", "--saver", url, input="hello\n", env=env)
    assert (done.returncode, done.stdout) == (2, "")
    shown = f"redis://{':***@' if userinfo else ''}127.0.0.1:{locked_redis}"
    assert done.stderr == (
        f"{ERROR_PREFIX}the Redis server at {shown} {said}, "
        f"redis://:PASSWORD@127.0.0.1:{locked_redis}\n"
    )
