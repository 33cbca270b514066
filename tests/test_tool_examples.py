"""The tool-calling examples run offline, end to end, and show what they promise."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._examples import run_example

ROOT = Path(__file__).resolve().parents[1]


def run(name: str, *args: str) -> str:
    return run_example(name, *args)


def test_datetime_tools_set_an_alarm_ten_minutes_later() -> None:
    out = run("datetime_tools.py")
    assert "tool get_current_date_time() -> 2026-11-21T10:05:00+01:00" in out  # empty arguments
    assert (
        'tool set_alarm({"time": "2026-11-21T10:15:00+01:00"}) -> Alarm set for 2026-11-21T10:15+01:00'
        in out
    )
    assert "assistant: Done. Alarm set for 2026-11-21T10:15+01:00." in out
    assert "alarms: ['2026-11-21T10:15:00+01:00']" in out


def test_weather_tool_with_pydantic_input() -> None:
    out = run("weather_tool.py")
    assert '"location"' in out and '"include_forecast"' in out and '"enum": ["C", "F"]' in out
    assert '"temperature":64.4' in out.replace(" ", "") and "light rain" in out
    assert "assistant: It is 64.4°F in Paris" in out


def test_calculator_method_tools_in_parallel_with_a_failure_reported_to_the_model() -> None:
    out = run("calculator_tools.py")
    assert "tools: ['add', 'multiply', 'square_root']" in out
    assert "tool multiply(" in out and "[ok] -> 408" in out
    assert "[error] -> tool 'square_root' failed: ValueError: x must not be negative" in out
    assert 'square_root({"x": 408}) [ok] -> 20.199' in out


def test_framework_and_user_controlled_execution() -> None:
    out = run("tool_execution_modes.py")
    assert "tools run: ['order_status']; assistant: Order A-1 has shipped." in out
    assert 'the model asks for order_status({"order_id": "A-1"}); we approve and run it' in out
    assert out.count("Order A-1 has shipped.") == 2


def test_chat_memory_per_conversation() -> None:
    out = run("chat_memory.py")
    assert "[ada] assistant: You asked: 'What is the capital of France?'." in out
    assert "[bob] assistant: You have not asked anything yet." in out
    assert "memory holds 4 messages for ada, 2 for bob" in out


@pytest.mark.parametrize(
    "name",
    [
        "datetime_tools.py",
        "weather_tool.py",
        "calculator_tools.py",
        "tool_execution_modes.py",
        "chat_memory.py",
    ],
)
def test_live_flag_is_offered(name: str) -> None:
    assert "--live" in run(name, "--help")
