"""The Agent Protocol's stream, as LangGraph's Agent Server sends it: modes and events.

Pure conversions, no web framework and no I/O: the stream modes we serve (as clients ask for
them), a part's SSE event name, the id of a streamed answer's chunks, our run events as JSON
(the ``run_events`` mode), down to the bytes of one server-sent event. The parts of each mode
are built by ``_wire_encoder.RunStreamEncoder``. The contract is what the official clients
send and read (``langgraph-sdk`` 0.4.14's source).
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Sequence
from typing import Any, Final

from ..events import RunEvent
from ..graph import Interrupt
from ._wire_messages import (
    NAMESPACE_WIRE,
    WireDict,
    error_to_wire,
    interrupt_to_wire,
    messages_to_wire,
    to_jsonable,
)

__all__ = [
    "HEARTBEAT",
    "STREAM_MODES",
    "event_name",
    "parse_stream_modes",
    "run_event_to_wire",
    "sse_event",
    "stream_message_id",
]

HEARTBEAT: Final = b": heartbeat\r\n\r\n"
"""An SSE comment line the server sends every few seconds to keep the connection open."""


# -- stream modes, event names, run events ---------------------------------------------------

STREAM_MODES: Final = frozenset(
    {"values", "updates", "messages", "messages-tuple", "custom", "tasks", "checkpoints",
     "debug", "run_events"}
)  # fmt: skip
"""The modes we serve: LangGraph's, less ``events`` (LangChain's callback events) and the
v2-only ``tools``/``lifecycle``, plus ``run_events``: our own ``RunEvent``s as JSON."""


def parse_stream_modes(value: Any, *, default: Sequence[str] = ("values",)) -> list[str]:
    """``stream_mode`` as clients send it -- a string, a list, a JSON array in a query
    parameter (the JS client's form), repeated query parameters (the Python client's), or
    nothing (``default``) -- as a list of modes, each once. Raises ``ValueError`` for a mode
    we do not serve, saying why."""
    if value is None or value == "" or value == []:
        return list(default)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError:
                raise ValueError(f"stream_mode {value!r} is not a JSON array") from None
        else:
            value = [text]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"stream_mode must be a string or a list, got {type(value).__name__}")
    modes: list[str] = []
    for mode in value:
        if mode in ("", None):
            continue
        if mode == "events":
            raise ValueError(
                "stream_mode 'events' (LangChain's callback events) is not served; "
                "'run_events' streams graph-agent's own run events"
            )
        if mode in ("tools", "lifecycle"):
            raise ValueError(
                f"stream_mode entries [{mode!r}] are only supported on the v2 event "
                "streaming endpoints"
            )
        if not isinstance(mode, str) or mode not in STREAM_MODES:
            raise ValueError(
                f"unknown stream_mode {mode!r}; served: {', '.join(sorted(STREAM_MODES))}"
            )
        if mode not in modes:
            modes.append(mode)
    return modes or list(default)


def event_name(mode: str, namespace: Sequence[str] = (), *, subgraphs: bool = False) -> str:
    """The SSE event name of a mode's part: ``mode``, or ``mode|node:task|...`` for a
    subgraph's part when the run streams subgraphs."""
    return "|".join((mode, *namespace)) if subgraphs and namespace else mode


def stream_message_id(run_id: str, namespace: Sequence[str], task_id: str | None, call: int) -> str:
    """The id of the chunks of one streamed model answer: the ``call``-th model call of the
    task (LangChain's ids of a run look the same: ``lc_run--<uuid>``)."""
    key = f"{run_id}\x1f{'|'.join(namespace)}\x1f{task_id}\x1f{call}"
    return f"lc_run--{uuid.uuid5(NAMESPACE_WIRE, key)}"


def run_event_to_wire(event: RunEvent, *, thread_id: str = "") -> WireDict:
    """One of our ``RunEvent``s as JSON (the ``run_events`` mode): every field of the event,
    ``namespace`` as a list, messages as LangChain dicts, errors as ``error_to_wire``,
    interrupts as ``{value, id, node, when, namespace}`` (this is our format, so it keeps
    what LangGraph's ``Interrupt`` dropped)."""
    wire: WireDict = {}
    for field in dataclasses.fields(event):  # type: ignore[arg-type]  # slotted dataclasses
        value = getattr(event, field.name)
        if field.name == "namespace":
            wire["namespace"] = list(value)
        elif isinstance(value, BaseException):
            wire[field.name] = error_to_wire(value)
        elif isinstance(value, Interrupt):
            wire[field.name] = _our_interrupt(value, thread_id)
        elif field.name == "interrupts":
            wire[field.name] = [_our_interrupt(i, thread_id) for i in value]
        elif field.name == "messages":
            wire[field.name] = messages_to_wire(value, thread_id=thread_id)
        else:
            wire[field.name] = to_jsonable(value, thread_id=thread_id)
    return wire


def _our_interrupt(interrupt: Interrupt, thread_id: str) -> WireDict:
    return {
        **interrupt_to_wire(interrupt, thread_id=thread_id),
        "node": interrupt.node,
        "when": interrupt.when,
        "namespace": list(interrupt.namespace),
    }


# -- SSE ------------------------------------------------------------------------------------


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _sse_field(value: str) -> bytes:
    return value.replace("\r", "").replace("\n", "").encode()


def sse_event(event: str, data: Any, id: str | None = None) -> bytes:
    """One server-sent event as LangGraph's server writes it: ``event: <name>``, ``data:
    <JSON on one line>``, ``id: <id>`` (only when given), each ended by CRLF, then a blank
    line. ``data`` must be JSON-able (``to_jsonable``)."""
    parts = [b"event: ", _sse_field(event), b"\r\ndata: ", _json_text(data).encode(), b"\r\n"]
    if id is not None:
        parts += [b"id: ", _sse_field(id), b"\r\n"]
    parts.append(b"\r\n")
    return b"".join(parts)
