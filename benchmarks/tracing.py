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
    app = make_react(k, MemorySaver())
    times: dict[str, list[float]] = {name: [] for name in settings}
    for round_ in range(rounds + 1):  # round 0 warms up
        for name, provider in settings.items():
            if provider is not None:
                instrument(provider)
            try:
                took = _conversations(app, f"{name}-{round_}", k, conversations)
            finally:
                uninstrument()
            if round_:
                times[name].append(took)
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
            **({"spans_per_conversation": spans_per_conversation} if name == "sdk" else {}),
        )
