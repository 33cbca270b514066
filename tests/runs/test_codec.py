"""A run's log as a store keeps it (``graph_agent.runs._codec``): the run's own objects come
back as they were written, whatever protocol reads them; an error comes back by its class
name with the message a client may be shown; what no registry knows is kept as plain data,
never dropped and never pickled."""

from __future__ import annotations

import dataclasses
import json
import uuid
from typing import Any

import pytest

from checkpoint import MemorySaver, register_type
from checkpoint.errors import SerializationError
from graph_agent import AssistantMessage, ReactAgent, ToolCall, tool
from graph_agent import events as ev
from graph_agent.graph import Command, Send
from graph_agent.models import ScriptedChatModel
from graph_agent.runs import RecordedError, Run
from graph_agent.runs._codec import dump_data, load_data


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def an_agent_run() -> list[ev.RunEvent]:
    call = ToolCall(id="c1", name="weather", arguments=json.dumps({"city": "Oslo"}))
    model = ScriptedChatModel([AssistantMessage("", tool_calls=[call]), "Sunny in Oslo."])
    agent = ReactAgent(name="w", model=model, tools=[weather], saver=MemorySaver())
    return list(agent.stream_events("Weather in Oslo?", {"thread_id": "t1"}))


def test_every_event_of_an_agents_run_comes_back_equal() -> None:
    events = an_agent_run()
    kinds = {e.kind for e in events}
    assert {"run_start", "model_delta", "model_end", "tool_end", "checkpoint", "run_end"} <= kinds
    assert [load_data(dump_data(e)) for e in events] == events


def test_an_error_comes_back_by_its_class_name_with_the_message_a_client_may_see() -> None:
    shown = load_data(dump_data(ev.NodeError(run_id="r", thread_id="t", error=KeyError("city"))))
    assert isinstance(shown.error, RecordedError)
    assert (type(shown.error).__name__, str(shown.error)) == ("KeyError", "'city'")

    class VendorError(Exception):
        pass

    secret = VendorError("token sk-123 refused")
    hidden = load_data(dump_data(secret))
    assert type(hidden).__name__ == "VendorError"
    assert "sk-123" not in str(hidden) and str(hidden) == "An internal error occurred"


def test_commands_and_sends_come_back_as_such() -> None:
    start = ev.RunStart(run_id="r", thread_id="t", input=Command(resume={"i-1": "yes"}))
    back = load_data(dump_data(start))
    assert isinstance(back.input, Command) and back.input.resume == {"i-1": "yes"}
    assert not load_data(dump_data(Command(update={"x": 1}))).has_resume
    end = ev.NodeEnd(
        run_id="r", thread_id="t", update=Command(goto=[Send("work", {"n": 1}), "done"])
    )
    assert load_data(dump_data(end)).update.goto == [Send("work", {"n": 1}), "done"]


def test_a_type_registered_by_its_user_comes_back_as_itself() -> None:
    @register_type(name=f"test.Forecast.{uuid.uuid4().hex}")
    @dataclasses.dataclass
    class Forecast:
        city: str
        rain: float

    custom = ev.CustomEvent(run_id="r", thread_id="t", data=Forecast("Oslo", 0.2))
    assert load_data(dump_data(custom)) == custom


def test_what_no_registry_knows_is_kept_as_plain_data() -> None:
    class Socketish:
        def __str__(self) -> str:
            return "<socket 7>"

    @dataclasses.dataclass
    class Unregistered:
        n: int

    data: Any = {"handle": Socketish(), "part": Unregistered(3), "ok": [1, "two"]}
    back = load_data(dump_data(ev.CustomEvent(run_id="r", thread_id="t", data=data)))
    assert back.data == {"handle": "<socket 7>", "part": {"n": 3}, "ok": [1, "two"]}


def test_a_runs_answer_is_kept_in_its_record_as_the_runs_own_objects() -> None:
    run = Run.new("t1", "agent", {}, {}, "enqueue")
    run.output = ValueError("no such city")
    back = Run.from_json(run.to_json())
    assert (type(back.output).__name__, str(back.output)) == ("ValueError", "no such city")
    run.output = None
    assert Run.from_json(run.to_json()).output is None
    earlier = json.loads(run.to_json())
    earlier["output"] = {"messages": []}  # an earlier version's answer, in wire words
    assert Run.from_json(json.dumps(earlier)).output is None


def test_bytes_that_are_not_a_log_entry_are_refused() -> None:
    with pytest.raises(SerializationError):
        load_data(b"\xc1 not msgpack")
