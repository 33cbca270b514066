"""Slash commands in ``graph-agent chat``: a line whose first word is ``/WORD`` is a
command; one the chat does not know lists the commands and goes nowhere (not to the model,
not into the thread). A first word with another ``/`` (a path) is a message, and ``//``
sends a line that starts with ``/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._cli import FakeOpenAI, cli_env, run_cli


def said(fake_model: FakeOpenAI) -> list[str]:
    """The user messages of the last request the model got."""
    return [m["content"] for m in fake_model.requests[-1]["messages"] if m["role"] == "user"]


def test_an_unknown_command_lists_the_commands_and_is_not_sent(
    fake_model: FakeOpenAI, tmp_path: Path
) -> None:
    env = cli_env(tmp_path, OPENAI_BASE_URL=fake_model.url())
    lines = "/foo\n/retry now\nhello\n/history\n"
    done = run_cli("chat", "--saver", "memory", input=lines, env=env)
    assert (done.returncode, done.stderr) == (0, "")
    out = done.stdout
    assert "/foo is not a command; nothing was sent. The commands:\n/history  " in out
    assert "/retry takes nothing after it; nothing was sent. The commands:\n/history" in out
    assert len(fake_model.requests) == 1 and said(fake_model) == ["hello"]
    assert "you said 'hello' (1 messages from you)" in out
    history = out[out.rindex("user: hello") :]
    assert "/foo" not in history and "/retry" not in history


def test_paths_and_double_slashes_are_messages(fake_model: FakeOpenAI, tmp_path: Path) -> None:
    env = cli_env(tmp_path, OPENAI_BASE_URL=fake_model.url())
    lines = "/etc/hosts is what?\n//help me\n"
    done = run_cli("chat", "--saver", "memory", input=lines, env=env)
    assert (done.returncode, done.stderr) == (0, "")
    assert said(fake_model) == ["/etc/hosts is what?", "/help me"]
    assert "not a command" not in done.stdout


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("/help", "/help"),
        ("/foo bar", "/foo"),
        ("/x-y_2", "/x-y_2"),
        ("/etc/hosts is what?", None),
        ("//help", None),
        ("/ spaced", None),
        ("/2fa code", None),
        ("hello /help", None),
        ("/über", None),
    ],
)
def test_the_rule(text: str, command: str | None) -> None:
    from graph_agent.cli._chat import command_of

    assert command_of(text) == command
