"""The order AG-UI clients hold a run's events to, checked on what a test read: the rules of
``@ag-ui/client``'s ``verifyEvents`` (which makes ``HttpAgent.runAgent`` fail), written
again in Python for the tests that read the stream themselves (tests/server/test_agui*.py).

A run starts with ``RUN_STARTED`` and nothing follows its ``RUN_FINISHED`` or ``RUN_ERROR``;
a text message, a tool call, a step and a sub-agent open once and close after they opened;
``RUN_FINISHED`` comes when none is open (``RUN_ERROR`` may come at any time)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_OPENS = {
    "TEXT_MESSAGE_START": ("text message", "message_id"),
    "TOOL_CALL_START": ("tool call", "tool_call_id"),
    "STEP_STARTED": ("step", "step_name"),
    "SUBAGENT_STARTED": ("sub-agent", "subagent_run_id"),
}
_USES = {
    "TEXT_MESSAGE_CONTENT": ("text message", "message_id"),
    "TOOL_CALL_ARGS": ("tool call", "tool_call_id"),
}
_CLOSES = {
    "TEXT_MESSAGE_END": ("text message", "message_id"),
    "TOOL_CALL_END": ("tool call", "tool_call_id"),
    "STEP_FINISHED": ("step", "step_name"),
    "SUBAGENT_FINISHED": ("sub-agent", "subagent_run_id"),
    "SUBAGENT_ERROR": ("sub-agent", "subagent_run_id"),
}


def assert_in_order(events: Sequence[Any]) -> None:
    """Fail, naming the event, where ``events`` (``ag-ui-protocol`` models, one run) break
    the order a client verifies."""
    open_: set[tuple[str, str]] = set()
    ended = False
    for index, event in enumerate(events):
        kind = event.type.value
        where = f"event {index} ({kind})"
        assert not ended, f"{where} comes after the run ended"
        if index == 0:
            assert kind == "RUN_STARTED", f"{where}: the first event must be RUN_STARTED"
            continue
        if kind in _OPENS:
            what, field = _OPENS[kind]
            item = (what, str(getattr(event, field)))
            assert item not in open_, f"{where}: the {what} {item[1]!r} is open already"
            open_.add(item)
        elif kind in _USES or kind in _CLOSES:
            what, field = _USES.get(kind) or _CLOSES[kind]
            item = (what, str(getattr(event, field)))
            assert item in open_, f"{where}: no open {what} {item[1]!r}"
            if kind in _CLOSES:
                open_.discard(item)
        elif kind == "RUN_FINISHED":
            assert not open_, f"{where} while these are open: {sorted(open_)}"
            ended = True
        elif kind == "RUN_ERROR":
            ended = True
