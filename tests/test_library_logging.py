"""graph-agent logs like a library: nothing reaches stderr of a script that never configured
logging (a ``NullHandler`` on ``graph_agent`` and ``checkpoint`` keeps Python's last-resort
handler out), and an application that configures logging gets every WARNING with its
traceback. Each case runs in a fresh interpreter: pytest configures logging itself."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FAILING_TOOL = """
import logging, sys
from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall, tool

if sys.argv[1:] == ["configured"]:
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")

@tool
def lookup(city: str) -> str:
    '''Weather of a city.'''
    raise ValueError("no such city")

model = ScriptedChatModel([
    AssistantMessage("", tool_calls=(ToolCall(id="c1", name="lookup", arguments='{"city": "X"}'),)),
    AssistantMessage("Sorry, I could not look that up."),
])
agent = ReactAgent.builder().name("weather").model(model).tools(lookup).build()
print(agent.call("Weather in X?", {"thread_id": "t"}).text)
"""

CHECKPOINT_WARNING = """
import logging, sys
import checkpoint

if sys.argv[1:] == ["configured"]:
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
logging.getLogger("checkpoint.redis").warning("retry 1 of 3")
print("done")
"""


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_a_tool_error_prints_nothing_when_the_application_configured_no_logging() -> None:
    done = run(FAILING_TOOL)
    assert done.stdout == "Sorry, I could not look that up.\n"
    assert done.stderr == ""


def test_a_tool_error_is_a_warning_with_its_traceback_once_logging_is_configured() -> None:
    done = run(FAILING_TOOL, "configured")
    assert done.stderr.startswith(
        "WARNING graph_agent.tools: tool 'lookup' (call c1) raised ValueError; "
        "its error goes back to the model\nTraceback (most recent call last):"
    )
    assert "ValueError: no such city" in done.stderr


def test_the_savers_loggers_are_quiet_too_until_logging_is_configured() -> None:
    assert run(CHECKPOINT_WARNING).stderr == ""
    assert run(CHECKPOINT_WARNING, "configured").stderr == (
        "WARNING checkpoint.redis: retry 1 of 3\n"
    )
