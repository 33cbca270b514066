"""DEBUG log lines of a run, made from its run events.

A run gets an ``EventLog`` listener only when the ``graph_agent`` logger is enabled for DEBUG
when the run starts, so a run that nobody logs costs one ``isEnabledFor`` call. Lines go to
``graph_agent.graph`` (runs and nodes), ``graph_agent.models`` (model calls) and
``graph_agent.tools`` (tool calls). Message content is never logged; a tool's arguments are,
cut to ``ARGUMENTS_SHOWN`` characters, at DEBUG only.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["ARGUMENTS_SHOWN", "EventLog", "with_event_log"]

ARGUMENTS_SHOWN = 200

_root = logging.getLogger("graph_agent")
_graph = logging.getLogger("graph_agent.graph")
_models = logging.getLogger("graph_agent.models")
_tools = logging.getLogger("graph_agent.tools")


def with_event_log(listeners: tuple[Any, ...]) -> tuple[Any, ...]:
    """``listeners``, plus an ``EventLog`` when ``graph_agent`` logs at DEBUG."""
    if _root.isEnabledFor(logging.DEBUG):
        return (*listeners, EventLog())
    return listeners


def _where(event: Any) -> str:
    inner = f" in {'/'.join(event.namespace)}" if event.namespace else ""
    return f"thread '{event.thread_id}'{inner}"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


class EventLog:
    """A listener that writes a DEBUG line per run, node, model call and tool call."""

    def __init__(self) -> None:
        self._started: dict[tuple[str, str | None, str | None], float] = {}
        self._prompt_sizes: dict[str | None, int] = {}
        self._arguments: dict[str, str] = {}

    event_kinds = frozenset(
        {"run_start", "run_end", "run_error", "node_start", "node_end", "node_error",
         "model_start", "model_end", "tool_start", "tool_end"}
    )  # fmt: skip

    def on_event(self, event: Any) -> None:
        handler = getattr(self, f"_{event.kind}", None)
        if handler is not None:
            handler(event)

    def _run_start(self, event: Any) -> None:
        self._started[("run", event.run_id, None)] = event.time
        _graph.debug("run %s started on %s", event.run_id, _where(event))

    def _run_end(self, event: Any) -> None:
        took = event.time - self._started.pop(("run", event.run_id, None), event.time)
        paused = f", paused by {len(event.interrupts)} interrupt(s)" if event.interrupts else ""
        _graph.debug("run %s ended in %s%s", event.run_id, _ms(took), paused)

    def _run_error(self, event: Any) -> None:
        took = event.time - self._started.pop(("run", event.run_id, None), event.time)
        _graph.debug(
            "run %s failed after %s: %s", event.run_id, _ms(took), type(event.error).__name__
        )

    def _node_start(self, event: Any) -> None:
        self._started[("node", event.run_id, event.task_id)] = event.time
        _graph.debug("node '%s' started (%s, task %s)", event.node, _where(event), event.task_id)

    def _node_end(self, event: Any) -> None:
        took = event.time - self._started.pop(("node", event.run_id, event.task_id), event.time)
        _graph.debug("node '%s' done in %s (%s)", event.node, _ms(took), _where(event))

    def _node_error(self, event: Any) -> None:
        took = event.time - self._started.pop(("node", event.run_id, event.task_id), event.time)
        _graph.debug(
            "node '%s' failed after %s (attempt %d): %s",
            event.node,
            _ms(took),
            event.attempt,
            type(event.error).__name__,
        )

    def _model_start(self, event: Any) -> None:
        self._prompt_sizes[event.task_id] = len(event.messages)

    def _model_end(self, event: Any) -> None:
        count = self._prompt_sizes.pop(event.task_id, None)
        plural = "" if count == 1 else "s"
        sent = f"{count} message{plural}" if count is not None else "a prompt"
        if event.error is not None:
            _models.debug(
                "model '%s' failed after %s on %s: %s",
                event.model,
                _ms(event.duration),
                sent,
                type(event.error).__name__,
            )
            return
        usage = event.usage
        tokens = (
            f"{usage.prompt_tokens} in, {usage.completion_tokens} out"
            if usage is not None
            else "not reported"
        )
        calls = len(getattr(event.message, "tool_calls", ()) or ())
        _models.debug(
            "model '%s' answered %s in %s (tokens: %s; %d tool call(s))",
            event.model,
            sent,
            _ms(event.duration),
            tokens,
            calls,
        )

    def _tool_start(self, event: Any) -> None:
        self._arguments[event.call_id] = event.arguments

    def _tool_end(self, event: Any) -> None:
        arguments = self._arguments.pop(event.call_id, "")
        if len(arguments) > ARGUMENTS_SHOWN:
            arguments = arguments[:ARGUMENTS_SHOWN] + f"... ({len(arguments)} chars)"
        error = event.error
        cause = getattr(error, "__cause__", None) or error
        outcome = f"failed ({type(cause).__name__})" if error is not None else "done"
        _tools.debug(
            "tool '%s' (call %s) %s in %s; arguments %s",
            event.name,
            event.call_id,
            outcome,
            _ms(event.duration),
            arguments,
        )
