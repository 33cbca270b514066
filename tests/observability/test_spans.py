"""OpenTelemetry spans of graph and agent runs, read from the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from checkpoint import MemorySaver
from graph_agent import (
    END,
    START,
    AssistantMessage,
    ChatResponse,
    Command,
    ReactAgent,
    RetryPolicy,
    ScriptedChatModel,
    StateGraph,
    ToolCall,
    Usage,
    interrupt,
    tool,
)
from graph_agent.events import installed_listeners
from graph_agent.observability import OpenTelemetryListener, instrument, uninstrument


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(provider)
    yield exporter
    uninstrument()
    provider.shutdown()


@pytest.fixture(autouse=True)
def _quiet_tool_warnings() -> Iterator[None]:
    logger = logging.getLogger("graph_agent.tools")
    level = logger.level
    logger.setLevel(logging.ERROR)  # the failing tool's WARNING is tested elsewhere
    yield
    logger.setLevel(level)


def tree(spans: tuple[ReadableSpan, ...] | list[ReadableSpan]) -> list[str]:
    """The spans as indented names, children in start order (tool calls side by side sorted
    by name, since parallel ones start in either order)."""
    ids = {s.context.span_id for s in spans}
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent if parent in ids else None, []).append(span)
    lines: list[str] = []

    def walk(parent: int | None, depth: int) -> None:
        kids = sorted(children.get(parent, []), key=lambda s: (s.start_time or 0, s.name))
        groups: list[list[ReadableSpan]] = []
        for kid in kids:
            tool = kid.name.startswith("execute_tool")
            if tool and groups and groups[-1][0].name.startswith("execute_tool"):
                groups[-1].append(kid)
            else:
                groups.append([kid])
        kids = [k for group in groups for k in sorted(group, key=lambda s: s.name)]
        for kid in kids:
            mark = " !" if kid.status.status_code is StatusCode.ERROR else ""
            lines.append("  " * depth + kid.name + mark)
            walk(kid.context.span_id, depth + 1)

    walk(None, 0)
    return lines


def by_name(spans: Any, name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


@tool
def forecast(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def broken_tool(city: str) -> str:
    """Always fails."""
    raise ValueError(f"no station in {city}")


def _two_tools_then_answer() -> ScriptedChatModel:
    calls = (
        ToolCall(id="call_f", name="forecast", arguments=json.dumps({"city": "Paris"})),
        ToolCall(id="call_b", name="broken_tool", arguments=json.dumps({"city": "Oslo"})),
    )
    return ScriptedChatModel([
        ChatResponse.of(AssistantMessage("", tool_calls=calls), "tool_calls", Usage(120, 15, 135)),
        ChatResponse.of(AssistantMessage("Paris is sunny."), "stop", Usage(160, 6, 166)),
    ])  # fmt: skip


def _agent(**kw: Any) -> ReactAgent:
    builder = ReactAgent.builder().name("weather").model(_two_tools_then_answer())
    return builder.tools(forecast, broken_tool).parallel_tool_execution(True).build()


PARALLEL_TREE = [
    "invoke_agent weather",
    "  chat ScriptedChatModel",
    "  execute_tool broken_tool !",
    "  execute_tool forecast",
    "  chat ScriptedChatModel",
]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_an_agent_run_is_one_trace_of_nodes_model_calls_and_parallel_tools(
    exporter: InMemorySpanExporter, asynchronous: bool
) -> None:
    agent = _agent()
    config = {"thread_id": "t-parallel"}
    if asynchronous:
        asyncio.run(agent.ainvoke("Weather?", config))
    else:
        agent.invoke("Weather?", config)
    spans = exporter.get_finished_spans()
    assert tree(spans) == PARALLEL_TREE
    assert len({s.context.trace_id for s in spans}) == 1

    (root,) = by_name(spans, "invoke_agent weather")
    assert root.parent is None
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "weather"
    assert root.attributes["gen_ai.conversation.id"] == "t-parallel"
    assert root.status.status_code is StatusCode.UNSET  # a tool error went back to the model

    first, second = by_name(spans, "chat ScriptedChatModel")
    assert first.kind is trace.SpanKind.CLIENT
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.provider.name"] == "scripted"
    assert first.attributes["gen_ai.request.model"] == "ScriptedChatModel"
    assert (
        first.attributes["gen_ai.usage.input_tokens"],
        first.attributes["gen_ai.usage.output_tokens"],
    ) == (120, 15)
    assert (
        second.attributes["gen_ai.usage.input_tokens"],
        second.attributes["gen_ai.usage.output_tokens"],
    ) == (160, 6)

    (ok,) = by_name(spans, "execute_tool forecast")
    assert ok.attributes["gen_ai.tool.name"] == "forecast"
    assert ok.attributes["gen_ai.tool.call.id"] == "call_f"
    assert ok.attributes["gen_ai.operation.name"] == "execute_tool"
    (failed,) = by_name(spans, "execute_tool broken_tool")
    assert failed.attributes["error.type"].endswith("ToolExecutionException")
    assert "no station in Oslo" in (failed.status.description or "")
    (recorded,) = [e for e in failed.events if e.name == "exception"]
    assert "Traceback" in recorded.attributes["exception.stacktrace"]
    for span in spans:  # every span lies within its parent's time
        if span.parent is not None:
            parent = next(p for p in spans if p.context.span_id == span.parent.span_id)
            assert parent.start_time <= span.start_time <= span.end_time <= parent.end_time


def test_no_content_is_recorded_unless_asked(exporter: InMemorySpanExporter) -> None:
    _agent().invoke("Weather? my card is 4242", {"thread_id": "t-private"})
    for span in exporter.get_finished_spans():
        text = json.dumps(dict(span.attributes or {}))
        assert "4242" not in text and "Paris" not in text and "sunny" not in text


def test_capture_content_records_messages_arguments_and_results() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(provider, capture_content=True)
    try:
        _agent().invoke("Weather?", {"thread_id": "t-content"})
    finally:
        uninstrument()
    spans = exporter.get_finished_spans()
    first = by_name(spans, "chat ScriptedChatModel")[0]
    assert json.loads(first.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Weather?"}]}
    ]
    output = json.loads(first.attributes["gen_ai.output.messages"])
    assert output[0]["role"] == "assistant"
    assert [p["name"] for p in output[0]["parts"]] == ["forecast", "broken_tool"]
    (ok,) = by_name(spans, "execute_tool forecast")
    assert json.loads(ok.attributes["gen_ai.tool.call.arguments"]) == {"city": "Paris"}
    assert ok.attributes["gen_ai.tool.call.result"] == "sunny in Paris"
    second = by_name(spans, "chat ScriptedChatModel")[1]
    sent = json.loads(second.attributes["gen_ai.input.messages"])
    assert sent[-1]["role"] == "tool"
    assert {p["id"] for p in sent[-1]["parts"]} == {"call_f", "call_b"}


def _pipeline(child_interrupts: bool = False) -> StateGraph:
    child = StateGraph()

    def draft(state: Any) -> dict[str, Any]:
        return {"draft": f"draft on {state['topic']}"}

    def review(state: Any) -> dict[str, Any]:
        return {"verdict": interrupt("approve?") if child_interrupts else "auto"}

    child.add_node("draft", draft).add_node("review", review)
    child.add_edge(START, "draft").add_edge("draft", "review").add_edge("review", END)
    parent = StateGraph()
    parent.add_node("plan", lambda s: {"topic": "owls"})
    parent.add_node("research", child.compile())
    parent.add_node("write", lambda s: {"text": f"{s['draft']} ({s['verdict']})"})
    parent.add_edge(START, "plan").add_edge("plan", "research").add_edge("research", "write")
    return parent.add_edge("write", END)


def test_a_subgraph_run_nests_under_the_node_that_runs_it(exporter: InMemorySpanExporter) -> None:
    _pipeline().compile(name="report").invoke({})
    spans = exporter.get_finished_spans()
    assert tree(spans) == [
        "invoke_workflow report",
        "  plan",
        "  research",
        "    invoke_workflow research",
        "      draft",
        "      review",
        "  write",
    ]
    (root,) = by_name(spans, "invoke_workflow report")
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["gen_ai.workflow.name"] == "report"
    (child,) = by_name(spans, "invoke_workflow research")
    assert child.attributes["graph_agent.namespace"].startswith("research:")


def test_an_agent_called_by_a_node_is_an_invoke_agent_span_under_it(
    exporter: InMemorySpanExporter,
) -> None:
    agent = ReactAgent.builder().name("helper").model(ScriptedChatModel(["Done."])).build()

    def assist(state: Any) -> dict[str, Any]:
        return {"answer": agent.call(state["question"]).text}

    graph = StateGraph()
    graph.add_node("prepare", lambda s: {"question": "hi"})
    graph.add_node("assist", assist)
    graph.add_edge(START, "prepare").add_edge("prepare", "assist").add_edge("assist", END)
    assert graph.compile(name="desk").invoke({})["answer"] == "Done."
    assert tree(exporter.get_finished_spans()) == [
        "invoke_workflow desk",
        "  prepare",
        "  assist",
        "    invoke_agent helper",
        "      chat ScriptedChatModel",
    ]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_an_agent_called_by_a_tool_nests_under_that_tool_call(
    exporter: InMemorySpanExporter, asynchronous: bool
) -> None:
    expert = ReactAgent.builder().name("expert").model(ScriptedChatModel(["42", "43"])).build()

    @tool
    def ask_expert(question: str) -> str:
        """Ask the expert."""
        return expert.call(question).text

    calls = tuple(
        ToolCall(id=f"call_{n}", name=name, arguments=json.dumps(args))
        for n, (name, args) in enumerate(
            [("ask_expert", {"question": "q"}), ("forecast", {"city": "Rome"}),
             ("ask_expert", {"question": "r"})]
        )
    )  # fmt: skip
    model = ScriptedChatModel([AssistantMessage("", tool_calls=calls), "Done."])
    outer = ReactAgent.builder().name("desk").model(model).tools(ask_expert, forecast).build()
    if asynchronous:
        asyncio.run(outer.acall("Ask", {"thread_id": "t-outer-a"}))
    else:
        outer.call("Ask", {"thread_id": "t-outer"})
    spans = exporter.get_finished_spans()
    assert tree(spans) == [
        "invoke_agent desk",
        "  chat ScriptedChatModel",
        "  execute_tool ask_expert",
        "    invoke_agent expert",
        "      chat ScriptedChatModel",
        "  execute_tool ask_expert",
        "    invoke_agent expert",
        "      chat ScriptedChatModel",
        "  execute_tool forecast",
        "  chat ScriptedChatModel",
    ]
    for tool_span in by_name(spans, "execute_tool ask_expert"):
        (inner,) = [s for s in spans if s.parent and s.parent.span_id == tool_span.context.span_id]
        assert inner.start_time >= tool_span.start_time and inner.end_time <= tool_span.end_time


def test_a_failing_node_marks_its_span_and_the_run_with_the_error(
    exporter: InMemorySpanExporter,
) -> None:
    attempts = []

    def flaky(state: Any) -> dict[str, Any]:
        attempts.append(1)
        raise ConnectionError(f"attempt {len(attempts)} failed")

    graph = StateGraph()
    graph.add_node(
        "fetch", flaky, retry=RetryPolicy(max_attempts=2, initial_interval=0, jitter=False)
    )
    graph.add_edge(START, "fetch").add_edge("fetch", END)
    with pytest.raises(ConnectionError):
        graph.compile(name="fetcher").invoke({})
    spans = exporter.get_finished_spans()
    assert tree(spans) == ["invoke_workflow fetcher !", "  fetch !", "  fetch !"]
    first, second = by_name(spans, "fetch")
    assert (first.attributes["graph_agent.attempt"], second.attributes["graph_agent.attempt"]) == (
        1,
        2,
    )
    assert first.status.description == "ConnectionError: attempt 1 failed"
    (root,) = by_name(spans, "invoke_workflow fetcher")
    assert root.attributes["error.type"] == "builtins.ConnectionError"
    assert [e.name for e in root.events] == ["exception"]


def test_a_resumed_run_is_a_trace_of_its_own_linked_to_the_run_it_resumes(
    exporter: InMemorySpanExporter,
) -> None:
    graph = _pipeline(child_interrupts=True).compile(saver=MemorySaver(), name="report")
    config = {"thread_id": "t-resume"}
    graph.invoke({}, config)
    paused = exporter.get_finished_spans()
    assert tree(paused) == [
        "invoke_workflow report",
        "  plan",
        "  research",
        "    invoke_workflow research",
        "      draft",
        "      review",
    ]
    (first_root,) = by_name(paused, "invoke_workflow report")
    assert first_root.attributes["graph_agent.interrupts"] == 1
    (review,) = by_name(paused, "review")
    assert review.attributes["graph_agent.stopped"] == "interrupted"
    exporter.clear()

    interrupt_id = graph.get_state(config).interrupts[0].id
    graph.invoke(Command(resume={interrupt_id: "yes"}), config)
    resumed = exporter.get_finished_spans()
    assert tree(resumed) == [
        "invoke_workflow report",
        "  research",
        "    invoke_workflow research",
        "      review",
        "  write",
    ]
    (root,) = by_name(resumed, "invoke_workflow report")
    assert root.parent is None
    assert root.context.trace_id != first_root.context.trace_id
    (link,) = root.links
    assert link.context.trace_id == first_root.context.trace_id
    assert link.context.span_id == first_root.context.span_id
    assert link.attributes["graph_agent.link"] == "resumes"
    assert "graph_agent.interrupts" not in root.attributes


def test_a_run_inside_the_callers_span_nests_under_it(exporter: InMemorySpanExporter) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("app").start_as_current_span("handle request"):
        _agent().invoke("Weather?", {"thread_id": "t-nested"})
    spans = exporter.get_finished_spans()
    assert tree(spans)[:2] == ["handle request", "  invoke_agent weather"]


def test_instrument_replaces_and_uninstrument_stops(exporter: InMemorySpanExporter) -> None:
    graph = _pipeline().compile(name="report")
    second = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(second))
    listener = instrument(provider)
    assert installed_listeners() == (listener,)
    graph.invoke({})
    assert exporter.get_finished_spans() == () and len(second.get_finished_spans()) == 7
    assert uninstrument() is True and installed_listeners() == ()
    graph.invoke({})
    assert len(second.get_finished_spans()) == 7
    assert uninstrument() is False


def test_a_listener_given_to_one_graph_traces_only_it_and_never_twice() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    listener = OpenTelemetryListener(provider)
    traced = _pipeline().compile(name="traced", listeners=[listener])
    _pipeline().compile(name="other").invoke({})
    traced.invoke({})
    assert len(by_name(exporter.get_finished_spans(), "invoke_workflow traced")) == 1
    assert by_name(exporter.get_finished_spans(), "invoke_workflow other") == []
    exporter.clear()
    from graph_agent.events import install_listener, uninstall_listener

    install_listener(listener)  # also installed: its runs still get each event once
    try:
        traced.invoke({})
    finally:
        uninstall_listener(listener)
    assert len(exporter.get_finished_spans()) == 7


def test_the_tracing_example_prints_the_runs_span_tree() -> None:
    from tests._examples import run_example

    out = run_example("tracing.py").splitlines()
    assert out[0] == "assistant: Paris is sunny; Atlantis has no station."
    assert out[1].startswith("trace ") and out[1].endswith(", 5 spans:")
    assert out[2].startswith("invoke_agent weather_agent  (")
    assert out[3].startswith("  chat ScriptedChatModel  (") and "tokens 96 in / 40 out" in out[3]
    ok, failed = sorted(out[4:6], key=lambda line: "ERROR" in line)
    assert ok.startswith("  execute_tool get_weather  (") and ok.endswith("call call_1)")
    assert failed.startswith("  execute_tool get_weather  (")
    assert "call call_2, ERROR ToolExecutionException" in failed
    assert "LookupError: no weather station in Atlantis" in failed
    assert "tokens 171 in / 12 out" in out[6]
