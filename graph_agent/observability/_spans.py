"""Run events turned into OpenTelemetry spans (GenAI semantic conventions)."""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
import weakref
from collections import OrderedDict
from time import time as _now
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode

from .._runtime.workers import StepCancelled
from ..errors import RunStopped
from ._content import input_messages, output_messages

__all__ = ["OpenTelemetryListener"]

_NS = 1_000_000_000
# Runs a listener remembers as paused, so the run that resumes one links to it; the oldest
# is forgotten first.
PAUSED_KEPT = 10_000
# Runs still open (a run whose end never came, e.g. an abandoned generator); the oldest is
# ended first.
OPEN_KEPT = 10_000

# ``graph_agent.stopped`` on a run span (and what it left open) that did not finish.
STOPPED = "stopped by the caller"
CANCELLED = "cancelled"
# The ERROR status description of a cancelled run's spans.
CANCELLED_STATUS = "the run was cancelled"

_RunKey = tuple[str, tuple[str, ...]]


# The error of the ``RunError`` of a cancelled async run: ``CancelledError``, or
# ``StepCancelled`` when the step's finished work was stored before the cancel went on.
_CANCEL_TYPES = (asyncio.CancelledError, StepCancelled)


# The tool call running in this thread or task (a ``tool_start`` is emitted where the tool
# runs): a graph or agent the tool runs nests under its span.
_running_tool: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "graph_agent_running_tool", default=None
)


def _ns(seconds: float) -> int:
    return int(seconds * _NS)


# An agent's own model and tool nodes get no span of their own: their ``chat`` and
# ``execute_tool`` spans sit right under ``invoke_agent`` (one span per call, not two).
AGENT_CALL_NODES = frozenset({"model", "tools"})


class _Run:
    """The open spans of one run of one graph (a subgraph's run is a run of its own)."""

    __slots__ = ("agent", "context", "key", "span", "tasks", "watch")

    def __init__(self, key: _RunKey, span: Span, agent: bool) -> None:
        self.key = key
        self.span = span
        self.agent = agent
        self.context = trace.set_span_in_context(span)  # where its node spans start
        self.tasks: set[str] = set()  # ids of its tasks, whose spans end with it if still open
        # the open runs started in the same asyncio task as this one (None: no task)
        self.watch: set[_Run] | None = None


class OpenTelemetryListener:
    """A run-event listener that emits spans. ``instrument()`` installs one for every run;
    pass one to ``compile(listeners=[...])`` or ``ReactAgent.builder().listeners(...)`` to
    trace only those runs.

    Spans: ``invoke_agent {name}`` or ``invoke_workflow {graph}`` per run (root of the trace,
    or a child of the span current when the run started), a span per node task named by the
    node, ``chat {model}`` per model call and ``execute_tool {tool}`` per tool call under
    their node (right under ``invoke_agent`` for an agent's own model and tool nodes); a
    subgraph's run under the node that runs it, a sub-agent's under the tool call that runs
    it. Failures set status ERROR and record the exception. A run that resumes a paused
    thread links to the run that paused it (runs seen by this listener).

    A run whose caller stopped it (an event stream closed early) ends with status UNSET and
    ``graph_agent.stopped = "stopped by the caller"``. A cancelled async run's spans, and
    the node, model and tool spans it had open, end with status ERROR "the run was
    cancelled". An async run that sends no end event at all (cancelled mid-step, or an
    ``astream`` its reader left) is ended when the asyncio task it started in ends:
    cancelled if the task was, or if the run was inside a step, else stopped by the caller.
    A sync ``stream()`` closed early is reported as a stop by the run itself.
    """

    def __init__(
        self, tracer_provider: trace.TracerProvider | None = None, capture_content: bool = False
    ) -> None:
        from .. import __version__

        self.capture_content = capture_content
        self._tracer = trace.get_tracer("graph_agent", __version__, tracer_provider=tracer_provider)
        self._lock = threading.Lock()
        self._runs: OrderedDict[tuple[str, tuple[str, ...]], _Run] = OrderedDict()
        self._nodes: dict[str, Span] = {}
        # task id -> the context its calls and nested runs start in (its node's span, or for
        # an agent's model and tool nodes the agent's)
        self._parents: dict[str, Any] = {}
        self._models: dict[str, Span] = {}
        self._tools: dict[tuple[str, str], Span] = {}
        self._paused: OrderedDict[str, SpanContext] = OrderedDict()
        # asyncio task -> the open runs started in it (ended with it if still open)
        self._watched: weakref.WeakKeyDictionary[asyncio.Future[Any], set[_Run]] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def event_kinds(self) -> frozenset[str]:
        """The run events it reads (a run built only for it builds no others)."""
        return _KINDS

    def __repr__(self) -> str:
        return f"OpenTelemetryListener(capture_content={self.capture_content})"

    def on_event(self, event: Any) -> None:
        handler = _HANDLERS.get(event.kind)
        if handler is not None:
            with self._lock:
                handler(self, event)

    # -- runs --------------------------------------------------------------------------------

    def _parent_context(self, event: Any) -> Any:
        """The context a run's span starts in: the tool call or node running it (a graph or
        agent called from a tool or a node, or a subgraph), else whatever span is current."""
        if not event.namespace:
            return None
        task_id = event.namespace[-1].rpartition(":")[2]
        running = _running_tool.get()
        if running is not None and running[0] == task_id:
            tool = self._tools.get(running)
            if tool is not None:
                return trace.set_span_in_context(tool)
        return self._parents.get(task_id)

    def _run_start(self, event: Any) -> None:
        name = event.graph or "graph"
        attributes: dict[str, Any] = {
            "gen_ai.conversation.id": event.thread_id,
            "graph_agent.run_id": event.run_id,
        }
        if event.agent:
            span_name = f"invoke_agent {name}"
            attributes["gen_ai.operation.name"] = "invoke_agent"
            attributes["gen_ai.agent.name"] = name
        else:
            span_name = f"invoke_workflow {name}"
            attributes["gen_ai.operation.name"] = "invoke_workflow"
            attributes["gen_ai.workflow.name"] = name
        if event.namespace:
            attributes["graph_agent.namespace"] = "/".join(event.namespace)
        links = None
        if not event.namespace:
            paused = self._paused.pop(event.thread_id, None)
            if paused is not None:
                links = [Link(paused, {"graph_agent.link": "resumes"})]
        span = self._tracer.start_span(
            span_name,
            context=self._parent_context(event),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
            start_time=_ns(event.time),
        )
        runs = self._runs
        key = (event.run_id, event.namespace)
        run = runs[key] = _Run(key, span, event.agent)
        self._watch(run)
        if len(runs) > OPEN_KEPT:
            _, oldest = runs.popitem(last=False)
            self._close(oldest, event.time, "never ended")

    def _close(self, run: _Run, time: float, why: str | None, cancelled: bool = False) -> None:
        """End what the run left open (the tasks an interrupt, a failure, a stop or a cancel
        stopped); with ``cancelled``, each with status ERROR."""
        end = _ns(time)
        if run.watch is not None:
            run.watch.discard(run)
        for task_id in run.tasks:
            self._parents.pop(task_id, None)
            left = [spans.pop(task_id, None) for spans in (self._models, self._nodes)]
            for key in [k for k in self._tools if k[0] == task_id] if self._tools else ():
                left.append(self._tools.pop(key))
            for span in left:
                if span is None:
                    continue
                if why is not None:
                    span.set_attribute("graph_agent.stopped", why)
                if cancelled:
                    _cancelled(span)
                span.end(end)
        run.span.end(end)

    def _stopped(self, run: _Run, time: float) -> None:
        run.span.set_attribute("graph_agent.stopped", STOPPED)
        self._close(run, time, STOPPED)

    def _cancelled(self, run: _Run, time: float) -> None:
        run.span.set_attribute("graph_agent.stopped", CANCELLED)
        _cancelled(run.span)
        self._close(run, time, CANCELLED, cancelled=True)

    def _stop_callers(self, namespace: tuple[str, ...], time: float) -> None:
        """A nested run stopped by its caller: the stop came from the outermost run's stream,
        so every run it is nested in stops too, and may send no end event of its own (the
        stop leaves through the node that ran the nested run). End them now."""
        while namespace:
            task_id = namespace[-1].rpartition(":")[2]
            namespace = namespace[:-1]
            caller = next(
                (r for k, r in self._runs.items() if k[1] == namespace and task_id in r.tasks),
                None,
            )
            if caller is None:
                return
            del self._runs[caller.key]
            self._stopped(caller, time)

    def _watch(self, run: _Run) -> None:
        """Note the asyncio task the run starts in, if any: a cancelled run (or one whose
        reader left it) may send no end event, but its task ends."""
        if asyncio._get_running_loop() is None:
            return
        task = asyncio.current_task()
        if task is None:
            return
        runs = self._watched.get(task)
        if runs is None:
            runs = self._watched[task] = set()
            task.add_done_callback(self._task_done)
        runs.add(run)
        run.watch = runs

    def _task_done(self, task: asyncio.Future[Any]) -> None:
        """End the runs the task started and left open: cancelled if the task was, or if the
        run was inside a step (only a cancel stops a step midway), else stopped by the
        caller (a stream it stopped reading)."""
        with self._lock:
            runs = self._watched.pop(task, None)
            now = _now()
            for run in list(runs or ()):
                if self._runs.pop(run.key, None) is None:
                    continue
                if task.cancelled() or any(t in self._parents for t in run.tasks):
                    self._cancelled(run, now)
                else:
                    self._stopped(run, now)

    def _run_end(self, event: Any) -> None:
        run = self._runs.pop((event.run_id, event.namespace), None)
        if run is None:
            return
        if event.interrupts:
            run.span.set_attribute("graph_agent.interrupts", len(event.interrupts))
            if not event.namespace:
                paused = self._paused
                paused[event.thread_id] = run.span.get_span_context()
                paused.move_to_end(event.thread_id)
                if len(paused) > PAUSED_KEPT:
                    paused.popitem(last=False)
        self._close(run, event.time, "interrupted" if event.interrupts else None)

    def _run_error(self, event: Any) -> None:
        run = self._runs.pop((event.run_id, event.namespace), None)
        if run is None:
            return
        error = event.error
        if isinstance(error, RunStopped):  # an event stream closed early: no failure
            self._stopped(run, event.time)
            self._stop_callers(event.namespace, event.time)
        elif isinstance(error, _CANCEL_TYPES):
            self._cancelled(run, event.time)
        else:
            _failed(run.span, error)
            self._close(run, event.time, f"run failed: {type(error).__name__}")

    # -- nodes -------------------------------------------------------------------------------

    def _node_start(self, event: Any) -> None:
        run = self._runs.get((event.run_id, event.namespace))
        task_id = event.task_id
        if run is None or task_id is None:
            return
        run.tasks.add(task_id)
        if run.agent and event.node in AGENT_CALL_NODES:
            self._parents[task_id] = run.context
            return
        span = self._tracer.start_span(
            event.node,
            context=run.context,
            attributes={"graph_agent.node": event.node, "graph_agent.task_id": task_id},
            start_time=_ns(event.time),
        )
        self._nodes[task_id] = span
        self._parents[task_id] = trace.set_span_in_context(span)

    def _node_end(self, event: Any) -> None:
        self._parents.pop(event.task_id, None)
        span = self._nodes.pop(event.task_id, None)
        if span is not None:
            span.end(_ns(event.time))

    def _node_error(self, event: Any) -> None:
        self._parents.pop(event.task_id, None)
        span = self._nodes.pop(event.task_id, None)
        if span is not None:
            span.set_attribute("graph_agent.attempt", event.attempt)
            _failed(span, event.error)
            span.end(_ns(event.time))

    # -- model and tool calls ----------------------------------------------------------------

    def _model_start(self, event: Any) -> None:
        parent = self._parents.get(event.task_id) if event.task_id else None
        if parent is None:
            return
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": event.model,
            "gen_ai.provider.name": event.provider or "unknown",
            "gen_ai.conversation.id": event.thread_id,
        }
        if self.capture_content:
            attributes["gen_ai.input.messages"] = json.dumps(input_messages(event.messages))
        self._models[event.task_id] = self._tracer.start_span(
            f"chat {event.model}",
            context=parent,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=_ns(event.time),
        )

    def _model_end(self, event: Any) -> None:
        span = self._models.pop(event.task_id, None) if event.task_id else None
        if span is None:
            return
        if event.error is not None:
            _failed(span, event.error)
        else:
            usage = event.usage
            if usage is not None:
                span.set_attributes(
                    {
                        "gen_ai.usage.input_tokens": usage.prompt_tokens,
                        "gen_ai.usage.output_tokens": usage.completion_tokens,
                    }
                )
            if self.capture_content and event.message is not None:
                span.set_attribute(
                    "gen_ai.output.messages", json.dumps(output_messages(event.message))
                )
        span.end(_ns(event.time))

    def _tool_start(self, event: Any) -> None:
        parent = self._parents.get(event.task_id) if event.task_id else None
        if parent is None:
            return
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.name,
            "gen_ai.tool.call.id": event.call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": event.thread_id,
        }
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = event.arguments
        key = (event.task_id, event.call_id)
        _running_tool.set(key)
        self._tools[key] = self._tracer.start_span(
            f"execute_tool {event.name}",
            context=parent,
            attributes=attributes,
            start_time=_ns(event.time),
        )

    def _tool_end(self, event: Any) -> None:
        key = (event.task_id, event.call_id)
        if _running_tool.get() == key:
            _running_tool.set(None)
        span = self._tools.pop(key, None) if event.task_id else None
        if span is None:
            return
        if event.error is not None:
            _failed(span, event.error)
        if self.capture_content and event.result is not None:
            span.set_attribute("gen_ai.tool.call.result", event.result)
        if event.return_direct:
            span.set_attribute("graph_agent.return_direct", True)
        span.end(_ns(event.time))


def _cancelled(span: Span) -> None:
    kind = asyncio.CancelledError
    span.set_attribute("error.type", f"{kind.__module__}.{kind.__qualname__}")
    span.set_status(Status(StatusCode.ERROR, CANCELLED_STATUS))


def _failed(span: Span, error: BaseException | None) -> None:
    if error is None:
        span.set_status(Status(StatusCode.ERROR))
        return
    if isinstance(error, _CANCEL_TYPES):  # a model or tool call its run's cancel stopped
        _cancelled(span)
        return
    kind = type(error)
    span.set_attribute("error.type", f"{kind.__module__}.{kind.__qualname__}")
    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, f"{kind.__name__}: {error}"))


_HANDLERS: dict[str, Any] = {
    "run_start": OpenTelemetryListener._run_start,
    "run_end": OpenTelemetryListener._run_end,
    "run_error": OpenTelemetryListener._run_error,
    "node_start": OpenTelemetryListener._node_start,
    "node_end": OpenTelemetryListener._node_end,
    "node_error": OpenTelemetryListener._node_error,
    "model_start": OpenTelemetryListener._model_start,
    "model_end": OpenTelemetryListener._model_end,
    "tool_start": OpenTelemetryListener._tool_start,
    "tool_end": OpenTelemetryListener._tool_end,
}
_KINDS = frozenset(_HANDLERS)
