"""W10: what OpenTelemetry tracing adds per model call and per tool call (ours only).

    python benchmarks/run.py --only W10

The W2 agent (K tool rounds per conversation: K+1 model calls and K tool calls) runs on
MemorySaver in three settings, in alternating rounds so that the machine's drift falls on all
three alike:

- ``off``: ``instrument()`` never called (the default: no listener, no event is built);
- ``sdk``: ``instrument()`` with the OpenTelemetry SDK's ``TracerProvider`` and a
  ``BatchSpanProcessor`` whose exporter drops the spans (what an application that exports
  to an OTLP collector pays in its own process, without the network);
- ``noop``: ``instrument()`` with the API's no-op provider (the library's own cost: events
  built and handed to the listener, spans that record nothing).

``added_us_per_call`` is (median time per conversation traced - off) / (model calls + tool
calls). Issue 14's budget is 30 µs.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from checkpoint import MemorySaver
from graph_agent import ToolResponseMessage, UserMessage


def _conversations(app: Any, tag: str, k: int, count: int) -> float:
    t0 = time.perf_counter()
    for r in range(count):
        out = app.invoke({"messages": [UserMessage("go")]}, {"thread_id": f"{tag}-{r}"})
    elapsed = time.perf_counter() - t0
    assert sum(isinstance(m, ToolResponseMessage) for m in out["messages"]) == k
    return elapsed / count


def w10_tracing(
    k: int,
    conversations: int,
    rounds: int,
    make_react: Callable[[int, Any], Any],
    emit: Callable[..., None],
) -> None:
    """``make_react`` and ``emit`` are workloads.py's (passed in: workloads imports this)."""
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.trace import NoOpTracerProvider

    from graph_agent.observability import instrument, uninstrument

    class Dropped(SpanExporter):
        def __init__(self) -> None:
            self.spans = 0

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            self.spans += len(spans)
            return SpanExportResult.SUCCESS

    dropped = Dropped()
    sdk = TracerProvider()
    sdk.add_span_processor(BatchSpanProcessor(dropped, max_queue_size=1 << 16))
    settings: dict[str, Any] = {"off": None, "sdk": sdk, "noop": NoOpTracerProvider()}
    times: dict[str, list[float]] = {name: [] for name in settings}
    for round_ in range(rounds + 1):  # round 0 warms up
        for name, provider in settings.items():
            # a fresh saver each round: the heap the garbage collector walks stays the same
            # size for every setting instead of growing with the conversations kept
            app = make_react(k, MemorySaver())
            # and none of the previous round's garbage (the SDK's spans) for this round to
            # collect: each round pays for the collections its own garbage causes
            gc.collect()
            if provider is not None:
                instrument(provider)
            try:
                took = _conversations(app, f"{name}-{round_}", k, conversations)
            finally:
                uninstrument()
            # export what the batch processor holds now, so that its thread does not run
            # during the next setting's round
            sdk.force_flush()
            if round_:
                times[name].append(took)
    span_alone = _sdk_span_alone(sdk)
    sdk.shutdown()
    calls = 2 * k + 1
    off = statistics.median(times["off"])
    spans_per_conversation = dropped.spans / (conversations * (rounds + 1))
    for name in ("sdk", "noop"):
        traced = statistics.median(times[name])
        emit(
            f"W10_tracing_{name}",
            conversations * rounds,
            sum(times[name]) * conversations,
            unit="conversation",
            model_and_tool_calls=calls,
            per_conversation_off_ms=round(off * 1e3, 3),
            per_conversation_on_ms=round(traced * 1e3, 3),
            added_us_per_call=round((traced - off) / calls * 1e6, 1),
            **(
                {
                    "spans_per_conversation": spans_per_conversation,
                    "sdk_span_alone_us": span_alone,
                }
                if name == "sdk"
                else {}
            ),
        )


def _sdk_span_alone(provider: Any, spans: int = 20_000) -> float:
    """What the SDK alone takes for one span shaped like a ``chat`` span (a parent, four
    attributes at the start, two at the end, explicit times), in µs: the floor under the
    ``sdk`` setting's cost per call, whatever graph-agent does."""
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind

    tracer = provider.get_tracer("w10")
    root = tracer.start_span("invoke_agent w10")
    parent = trace.set_span_in_context(root)
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "scripted",
        "gen_ai.provider.name": "scripted",
        "gen_ai.conversation.id": "w10-0",
    }
    gc.collect()
    t0 = time.perf_counter()
    for _ in range(spans):
        span = tracer.start_span(
            "chat scripted", context=parent, kind=SpanKind.CLIENT, attributes=attributes,
            start_time=time.time_ns(),
        )  # fmt: skip
        span.set_attributes({"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5})
        span.end(time.time_ns())
    took = time.perf_counter() - t0
    root.end()
    provider.force_flush()
    return round(took / spans * 1e6, 1)
