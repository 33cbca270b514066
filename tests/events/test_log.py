"""What a run logs: DEBUG lines for runs, nodes, model calls and tool calls when the
``graph_agent`` logger is at DEBUG (and no listener at all otherwise); a tool error that goes
back to the model is a WARNING with its traceback; message content is never logged."""

from __future__ import annotations

import asyncio
import logging

import pytest

from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall, tool
from graph_agent.events._log import ARGUMENTS_SHOWN, EventLog, with_event_log

SECRET = "my PIN is 4711"


@tool
def lookup(city: str) -> str:
    """Weather of a city."""
    if city == "Atlantis":
        raise ValueError("no such city")
    return f"sunny in {city}"


def weather_agent() -> ReactAgent:
    calls = (
        ToolCall(id="c1", name="lookup", arguments='{"city": "Paris"}'),
        ToolCall(id="c2", name="lookup", arguments='{"city": "Atlantis"}'),
        ToolCall(id="c3", name="lookup", arguments='{"city": "' + "x" * 300 + '"}'),
    )
    model = ScriptedChatModel(
        [AssistantMessage("", tool_calls=calls), AssistantMessage("Paris is sunny.")]
    )
    return ReactAgent.builder().name("weather").model(model).tools(lookup).build()


def lines(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == name]


def test_debug_lines_for_the_run_its_nodes_model_calls_and_tool_calls(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG, logger="graph_agent"):
        weather_agent().call(SECRET, {"thread_id": "t1"})
    graph = lines(caplog, "graph_agent.graph")
    assert graph[0].startswith("run ") and graph[0].endswith(" started on thread 't1'")
    assert graph[-1].startswith("run ") and " ended in " in graph[-1]
    assert sum(line.startswith("node 'model' done in ") for line in graph) == 2
    assert sum(line.startswith("node 'tools' done in ") for line in graph) == 1
    models = lines(caplog, "graph_agent.models")
    assert models[0].startswith("model 'ScriptedChatModel' answered 1 message in ")
    assert models[0].endswith("(tokens: not reported; 3 tool call(s))")
    tools = lines(caplog, "graph_agent.tools")
    done = [t for t in tools if " in " in t and "arguments" in t]
    assert any(t.startswith("tool 'lookup' (call c1) done in ") for t in done)
    assert any(t.startswith("tool 'lookup' (call c2) failed (ValueError) in ") for t in done)
    long = next(t for t in done if "(call c3)" in t)
    assert long.endswith("... (312 chars)")  # {"city": "x...x"}: 312 characters in all
    assert "x" * (ARGUMENTS_SHOWN - 10) in long and "x" * 300 not in long
    assert not any(SECRET in r.getMessage() for r in caplog.records)  # content: never


def test_a_tool_error_sent_to_the_model_is_a_warning_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="graph_agent"):
        weather_agent().call(SECRET, {"thread_id": "t2"})
    [record] = caplog.records
    assert (record.name, record.levelno) == ("graph_agent.tools", logging.WARNING)
    assert record.getMessage() == (
        "tool 'lookup' (call c2) raised ValueError; its error goes back to the model"
    )
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1].__cause__, ValueError)  # the tool's own traceback
    assert SECRET not in caplog.text and "Atlantis" not in record.getMessage()


def test_no_listener_is_added_unless_the_logger_is_at_debug() -> None:
    base = logging.getLogger("graph_agent")
    listeners = (object(),)
    level = base.level
    try:
        base.setLevel(logging.INFO)
        assert with_event_log(listeners) is listeners
        base.setLevel(logging.DEBUG)
        added = with_event_log(listeners)
        assert added[0] is listeners[0] and isinstance(added[1], EventLog)
    finally:
        base.setLevel(level)


def test_async_runs_log_the_same(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="graph_agent"):
        asyncio.run(weather_agent().acall("hi", {"thread_id": "t3"}))
    assert sum(" done in " in line for line in lines(caplog, "graph_agent.graph")) == 3
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
