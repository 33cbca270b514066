"""Trace an agent with OpenTelemetry and print the run's span tree.

``instrument()`` traces every run of the process. Here the spans go to the SDK's in-memory
exporter and are printed as a tree with their timings, tokens and errors; in an application
they go to Jaeger, Langfuse or any OTLP endpoint (docs/observability.md). Needs the ``otel``
extra and the SDK: ``pip install 'graph-agent[otel]' opentelemetry-sdk``.

    python examples/tracing.py [--live]
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from _models import choose, needs, parse_args, served

from graph_agent import (
    AssistantMessage,
    ChatModel,
    ChatResponse,
    ReactAgent,
    ScriptedChatModel,
    ToolCall,
    Usage,
    tool,
)

with needs("OpenTelemetry", "pip install 'graph-agent[otel]' opentelemetry-sdk"):
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from graph_agent.observability import instrument, uninstrument


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    if city == "Atlantis":
        raise LookupError(f"no weather station in {city}")
    return f"sunny, 18°C in {city}"


def offline_model() -> ScriptedChatModel:
    calls = tuple(
        ToolCall(id=f"call_{i}", name="get_weather", arguments=json.dumps({"city": city}))
        for i, city in enumerate(("Paris", "Atlantis"), start=1)
    )
    return ScriptedChatModel([
        ChatResponse.of(AssistantMessage("", tool_calls=calls), "tool_calls", Usage(96, 40, 136)),
        ChatResponse.of(AssistantMessage("Paris is sunny; Atlantis has no station."), "stop",
                        Usage(171, 12, 183)),
    ])  # fmt: skip


def describe(span: ReadableSpan) -> str:
    attributes = span.attributes or {}
    notes = [f"{((span.end_time or 0) - (span.start_time or 0)) / 1e6:.1f} ms"]
    if "gen_ai.usage.input_tokens" in attributes:
        notes.append(
            f"tokens {attributes['gen_ai.usage.input_tokens']} in"
            f" / {attributes['gen_ai.usage.output_tokens']} out"
        )
    if "gen_ai.tool.call.id" in attributes:
        notes.append(f"call {attributes['gen_ai.tool.call.id']}")
    if span.status.status_code.name == "ERROR":
        notes.append(f"ERROR {span.status.description}")
    return f"{span.name}  ({', '.join(notes)})"


def print_tree(spans: Sequence[ReadableSpan]) -> None:
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent, []).append(span)

    def show(parent: int | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: (s.start_time or 0, s.name)):
            print("  " * depth + describe(span))
            show(span.context.span_id, depth + 1)

    show(None, 0)


def build(model: ChatModel) -> ReactAgent:
    """The traced agent, on ``model``."""
    return ReactAgent.builder().name("weather_agent").model(model).tools(get_weather).build()


# served: `graph-agent serve examples/tracing.py:agent` (its model: see _models.py)
agent = build(served(offline_model))


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(provider)
    try:
        agent = build(choose(args, offline_model()))
        reply = agent.call("What's the weather in Paris and in Atlantis?", {"thread_id": "demo"})
    finally:
        uninstrument()
        provider.shutdown()
    print(f"assistant: {reply.text}")
    spans = exporter.get_finished_spans()
    print(f"trace {spans[0].context.trace_id:032x}, {len(spans)} spans:")
    print_tree(spans)


if __name__ == "__main__":
    main()
