"""How the spans of a run end when the run does not finish: cancelled (async), or stopped by
its caller closing a stream early (sync and async). Every span is ended and exported; a
cancel is an ERROR that says so, a stop is no error."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from graph_agent import (
    END,
    START,
    AssistantMessage,
    FunctionChatModel,
    ReactAgent,
    ScriptedChatModel,
    StateGraph,
    ToolCall,
    tool,
)

from .._stop import await_stopped
from .._stop import until_stopped as _until_stopped
from .test_spans import by_name, tree
from .test_spans import exporter as exporter  # the fixture

WAIT = 10.0  # seconds a test waits for what it waits on before it fails

CANCELLED = ("the run was cancelled", "asyncio.exceptions.CancelledError", "cancelled")
STOPPED_BY_CALLER = "stopped by the caller"


def ended_as(span: ReadableSpan) -> tuple[Any, ...]:
    """How a span ended: ERROR's description, its ``error.type`` and ``graph_agent.stopped``;
    or ``"ok"`` (status UNSET or OK) and ``graph_agent.stopped``."""
    attributes = span.attributes or {}
    if span.status.status_code is StatusCode.ERROR:
        return (
            span.status.description,
            attributes.get("error.type"),
            attributes.get("graph_agent.stopped"),
        )
    return ("ok", attributes.get("graph_agent.stopped"))


def _calls(*names: str) -> AssistantMessage:
    return AssistantMessage(
        "",
        tool_calls=tuple(
            ToolCall(id=f"call_{name}", name=name, arguments=json.dumps({"city": "Oslo"}))
            for name in names
        ),
    )


@tool
def quick(city: str) -> str:
    """Answers at once."""
    return f"cold in {city}"


# -- cancelled ----------------------------------------------------------------------------------


def _cancel_when(started: asyncio.Event, agent: ReactAgent) -> None:
    """Run ``agent`` in a task; cancel the task once ``started`` is set."""

    async def main() -> None:
        run = asyncio.ensure_future(agent.ainvoke("Weather?", {"thread_id": "t-cancel"}))
        await asyncio.wait_for(started.wait(), WAIT)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())


@pytest.mark.parametrize("finished", [False, True], ids=["one-tool", "beside-a-finished-one"])
def test_an_async_run_cancelled_while_a_tool_runs_ends_its_spans_as_cancelled(
    exporter: InMemorySpanExporter, finished: bool
) -> None:
    """Cancelled while its tool waits (alone, or beside one that finished: then the finished
    call is stored first, and the run reports the cancel as its error)."""
    started = asyncio.Event()

    @tool
    async def hang(city: str) -> str:
        """Never answers."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    names = ("hang", "quick") if finished else ("hang",)
    model = ScriptedChatModel([_calls(*names), "Done."])
    agent = ReactAgent.builder().name("weather").model(model).tools(hang, quick).build()
    _cancel_when(started, agent)
    spans = exporter.get_finished_spans()
    assert tree(spans) == [
        "invoke_agent weather !",
        "  chat ScriptedChatModel",
        "  execute_tool hang !",
        *(["  execute_tool quick"] if finished else []),
    ]
    (run,) = by_name(spans, "invoke_agent weather")
    (hung,) = by_name(spans, "execute_tool hang")
    assert ended_as(run) == ended_as(hung) == CANCELLED
    for span in spans:  # ended within the run, which ended when it was cancelled
        assert span.end_time is not None and span.end_time <= run.end_time


def test_an_async_run_cancelled_while_the_model_is_called_ends_its_spans_as_cancelled(
    exporter: InMemorySpanExporter,
) -> None:
    started = asyncio.Event()

    async def never_answers(prompt: Any) -> str:
        started.set()
        await asyncio.sleep(3600)
        return "never"

    model = FunctionChatModel(never_answers)
    _cancel_when(started, ReactAgent.builder().name("weather").model(model).build())
    spans = exporter.get_finished_spans()
    assert tree(spans) == ["invoke_agent weather !", "  chat FunctionChatModel !"]
    (run,) = by_name(spans, "invoke_agent weather")
    (call,) = by_name(spans, "chat FunctionChatModel")
    assert ended_as(run) == CANCELLED
    assert ended_as(call) == (*CANCELLED[:2], None)  # it ended on its own error, a cancel


# -- stopped by the caller ----------------------------------------------------------------------


@tool
def waits_for_the_close(city: str) -> str:
    """Answers once the reader has closed the stream."""
    _until_stopped()
    return f"cold in {city}"


@tool
async def awaits_the_close(city: str) -> str:
    """Answers once the reader has closed the stream (async)."""
    await await_stopped()
    return f"cold in {city}"


def _stopping_agent() -> ReactAgent:
    model = ScriptedChatModel([_calls("waits_for_the_close", "awaits_the_close"), "Done."])
    builder = ReactAgent.builder().name("weather").model(model)
    return builder.tools(waits_for_the_close, awaits_the_close).build()


STOPPED_TREE = [
    "invoke_agent weather",
    "  chat ScriptedChatModel",
    "  execute_tool awaits_the_close",
    "  execute_tool waits_for_the_close",
]


def _assert_stopped_at_the_tools(spans: tuple[ReadableSpan, ...]) -> None:
    assert tree(spans) == STOPPED_TREE  # no second model call: the run stopped after the tools
    (run,) = by_name(spans, "invoke_agent weather")
    assert ended_as(run) == ("ok", STOPPED_BY_CALLER)
    assert "error.type" not in (run.attributes or {}) and run.events == ()
    assert all(ended_as(span) == ("ok", None) for span in spans if span is not run)


@pytest.mark.parametrize("how", ["break", "close"])
def test_a_sync_event_stream_closed_early_ends_its_run_as_stopped_not_failed(
    exporter: InMemorySpanExporter, how: str
) -> None:
    events = _stopping_agent().stream_events("Weather?", {"thread_id": "t-stop"})
    for event in events:
        if event.kind == "tool_start":
            if how == "close":
                events.close()
            break
    del events  # closed (if break left it open) as it goes
    _assert_stopped_at_the_tools(exporter.get_finished_spans())


def test_an_async_event_stream_closed_early_ends_its_run_as_stopped_not_failed(
    exporter: InMemorySpanExporter,
) -> None:
    """(A graph's ``astream_events``: a ``ReactAgent``'s does not close the graph's stream
    when it is closed, so its run goes on until the garbage collector closes that.)"""

    async def fetch(state: Any) -> dict[str, Any]:
        await await_stopped()
        return {"data": 1}

    graph = StateGraph()
    graph.add_node("fetch", fetch).add_node("write", lambda state: {"text": "t"})
    graph.add_edge(START, "fetch").add_edge("fetch", "write").add_edge("write", END)

    async def main() -> None:
        events = graph.compile(name="report").astream_events({})
        async for event in events:
            if event.kind == "node_start":
                break
        await events.aclose()

    asyncio.run(main())
    spans = exporter.get_finished_spans()
    assert tree(spans) == ["invoke_workflow report", "  fetch"]  # stopped before "write"
    run, node = by_name(spans, "invoke_workflow report")[0], by_name(spans, "fetch")[0]
    assert ended_as(run) == ("ok", STOPPED_BY_CALLER) and ended_as(node) == ("ok", None)
    assert "error.type" not in (run.attributes or {}) and run.events == ()


def test_a_subgraph_stopped_by_a_closed_stream_ends_the_runs_around_it_too(
    exporter: InMemorySpanExporter,
) -> None:
    """The stop leaves the outer run through the node running the subgraph, with no event of
    the outer run's own: its spans end with the subgraph's."""
    child = StateGraph()
    child.add_node("draft", lambda state: (_until_stopped(), {"draft": "d"})[1])
    child.add_node("review", lambda state: {"verdict": "ok"})
    child.add_edge(START, "draft").add_edge("draft", "review").add_edge("review", END)
    parent = StateGraph()
    parent.add_node("research", child.compile())
    parent.add_node("write", lambda state: {"text": "t"})
    parent.add_edge(START, "research").add_edge("research", "write").add_edge("write", END)
    events = parent.compile(name="report").stream_events({})
    for event in events:
        if event.kind == "node_start" and event.node == "draft":
            break
    events.close()
    spans = exporter.get_finished_spans()
    assert tree(spans) == [
        "invoke_workflow report",
        "  research",
        "    invoke_workflow research",
        "      draft",
    ]
    outer, node = by_name(spans, "invoke_workflow report")[0], by_name(spans, "research")[0]
    inner = by_name(spans, "invoke_workflow research")[0]
    assert ended_as(outer) == ended_as(node) == ended_as(inner) == ("ok", STOPPED_BY_CALLER)
    assert ended_as(by_name(spans, "draft")[0]) == ("ok", None)


def _two_steps_agent() -> ReactAgent:
    model = ScriptedChatModel([_calls("quick"), "Done."])
    return ReactAgent.builder().name("weather").model(model).tools(quick).build()


def test_an_astream_left_early_ends_its_run_as_stopped_when_its_task_ends(
    exporter: InMemorySpanExporter,
) -> None:
    """``astream`` sends no event when its reader leaves it: the run ends with the asyncio
    task that read it."""

    async def read_one() -> None:
        async for output in _two_steps_agent().astream("Weather?", {"thread_id": "t-left"}):
            assert output.node == "model"
            break

    async def main() -> None:
        await asyncio.ensure_future(read_one())
        await asyncio.sleep(0)  # the task's done callbacks added after this wait's own run
        assert tree(exporter.get_finished_spans()) == [
            "invoke_agent weather",
            "  chat ScriptedChatModel",
        ]

    asyncio.run(main())
    (run,) = by_name(exporter.get_finished_spans(), "invoke_agent weather")
    assert ended_as(run) == ("ok", STOPPED_BY_CALLER)


def test_a_sync_stream_left_early_ends_its_run_as_stopped(
    exporter: InMemorySpanExporter,
) -> None:
    for output in _two_steps_agent().stream("Weather?", {"thread_id": "t-sync-left"}):
        assert output.node == "model"
        break
    (run,) = by_name(exporter.get_finished_spans(), "invoke_agent weather")
    assert ended_as(run) == ("ok", STOPPED_BY_CALLER)
