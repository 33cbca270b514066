"""The agent examples run offline, end to end, and show what they promise."""

from __future__ import annotations

import re
from pathlib import Path

from .._examples import run_example

ROOT = Path(__file__).resolve().parents[2]


def run(name: str, *args: str) -> str:
    return run_example(name, *args)


def test_financial_assistant_reads_the_user_id_from_the_config() -> None:
    out = run("financial_assistant.py")
    assert "[u-ada]   model calls list_accounts({})" in out
    assert "[u-ada] assistant: You have 2 account(s): checking CHK-1001: 1250.00 EUR" in out
    assert "[u-bob] assistant: You have 1 account(s): checking CHK-2001: 310.75 EUR." in out
    # Bob cannot read Ada's account even when the model asks for it by id.
    assert "[u-bob]   tool account_balance -> account SAV-1002 is not one of this user's" in out
    assert "[u-ada]   tool account_balance -> 8400.00 EUR" in out
    assert "CHK-1001" not in "".join(line for line in out.splitlines() if "[u-bob]" in line)


def test_conversation_summary_reads_the_state_messages_over_turns() -> None:
    out = run("conversation_summary.py")
    summary = out.split("--- turn 3", 1)[1].split("--- a new thread", 1)[0]
    assert "4 messages so far:" in summary
    assert "- the user said: I'm going to Lisbon in May. What's the weather like?" in summary
    assert "- the assistant said: Lisbon in May is sunny" in summary
    assert "- the user said: Which tram should I take?" in summary
    assert "- the assistant said: Take tram 28" in summary
    assert "summarize our conversation" not in summary.split("assistant:", 1)[1]
    other = out.split("--- a new thread", 1)[1]
    assert "Nothing has been said yet." in other
    assert "thread 'trip' holds 8 messages" in out


def test_state_hook_updates_the_state_after_the_model() -> None:
    out = run("state_hook.py")
    stamp = r"last_updated=\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00"
    states = re.findall(rf"state: user_name=(\S+) model_calls=(\d+) {stamp}", out)
    assert states == [("None", "1"), ("'Ada'", "2"), ("'Ada'", "3")]
    assert "assistant: Your name is Ada." in out
    assert 'UpdateStateHook_after_model["UpdateStateHook.after_model"]' in out
    assert "model --> UpdateStateHook_after_model" in out


def test_return_direct_answers_with_the_tool_result_and_one_model_call() -> None:
    out = run("return_direct.py")
    assert out.splitlines() == [
        "user: Where is my order A-1001?",
        "assistant: Order A-1001: shipped, expected delivery 2026-05-14.",
        "nodes run: model -> tools",
        "return_direct: True",
        "model calls: 1",
    ]


def test_examples_take_live_flag_help() -> None:
    for name in (
        "financial_assistant.py",
        "conversation_summary.py",
        "state_hook.py",
        "return_direct.py",
    ):
        assert "--live" in run(name, "--help")
