"""Tool calls a stopped run left unanswered, answered before new input reaches the thread.

A run can stop between the model asking for tools and the tools' results being stored: a tool
raised, Ctrl-C, a cancelled task, an abandoned stream, a conflicting writer, a killed process.
The thread then ends with an assistant message whose tool calls have no tool response, and
every OpenAI-compatible server refuses the next request that carries it (HTTP 400). So new
input to such a thread (``invoke``/``call``/``stream`` with messages, or ``update_state``)
is preceded by one tool response per unanswered call saying it was not recorded.

A call that *did* finish before its run stopped (beside a sibling that failed, or before a
cancel or a crash on a durable saver) was kept with the stopped step; it is answered with
its kept result, never told it has none: a model told "no result" would call it again (a
second booking, a second payment).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._runtime.task_scope import NOTHING_KEPT, current_task
from ..graph.state import Overwrite
from ..messages import AssistantMessage, Message, ToolCall, ToolResponse, ToolResponseMessage
from ._keys import MESSAGES

UNANSWERED_TEXT = (
    "No result: the run stopped (an error, a cancellation or a crash) before this tool call's "
    "result was recorded, so it may not have run. Call it again if it is still needed."
)


CANCELLED_TEXT = (
    "Cancelled: the run was cancelled before this tool call finished, so it may not have run "
    "(or not to its end). Call it again if it is still needed."
)


def cancelled_responses(calls: Sequence[ToolCall]) -> ToolResponseMessage | None:
    """The tool node's answer to ``calls`` when its run is cancelled: a call that finished
    (in this run, or kept by an earlier one; a sync tool's thread, which cannot be stopped,
    runs on to its end and is kept) with its result, the others as cancelled
    (``metadata["cancelled"]``). ``None`` outside a graph task (nothing kept to read)."""
    task = current_task.get()
    if task is None:
        return None
    responses: list[ToolResponse] = []
    cancelled = False
    for call in calls:
        kept = task.child(call.id).recall()
        if kept is NOTHING_KEPT:
            cancelled = True
            text = CANCELLED_TEXT
        else:
            text = str(kept[0])
        responses.append(ToolResponse(id=call.id, name=call.name, response_data=text))
    return ToolResponseMessage(
        responses=tuple(responses), metadata={"cancelled": True} if cancelled else {}
    )


def unanswered_calls(messages: Sequence[Message] | None) -> list[ToolCall]:
    """The calls of the conversation's last assistant message that no tool response after it
    answers (only the tail is read: earlier turns were answered when they ended)."""
    if not messages:
        return []
    answered: set[str] = set()
    position = len(messages) - 1
    while position >= 0 and isinstance(messages[position], ToolResponseMessage):
        answered.update(r.id for r in messages[position].responses)  # type: ignore[union-attr]
        position -= 1
    last = messages[position] if position >= 0 else None
    if not isinstance(last, AssistantMessage) or not last.tool_calls:
        return []
    return [call for call in last.tool_calls if call.id not in answered]


def kept_results(resume: Mapping[str, Any]) -> dict[str, str]:
    """The results of the tool calls a stopped step kept (call id -> the tool's answer), from
    the head checkpoint's resume values (``<task id>/kept/<call id>``: what the tool manager
    kept for a re-run of the tool node)."""
    results: dict[str, str] = {}
    for key, value in resume.items():
        _, found, call_id = key.partition("/kept/")
        if found and call_id and "/" not in call_id and isinstance(value, (list, tuple)):
            results[call_id] = str(value[0])
    return results


def answer_unfinished_calls(
    values: Mapping[str, Any], update: Mapping[str, Any], kept: Mapping[str, Any] | None = None
) -> Mapping[str, Any]:
    """``update`` with a tool response for each call the stored conversation left
    unanswered, placed after any tool responses the update brings itself: the call's kept
    result when it had finished (``kept``: the head's resume values), else "no result".
    Unchanged when the update adds no message, brings only tool responses (the caller
    answers the calls), or replaces the history (``Overwrite``)."""
    new = update.get(MESSAGES)
    if new is None or isinstance(new, Overwrite):
        return update
    items: list[Any] = list(new) if isinstance(new, (list, tuple)) else [new]
    if not items:
        return update
    missing = unanswered_calls(values.get(MESSAGES))
    if not missing:
        return update
    given = 0
    answered: set[str] = set()
    while given < len(items) and isinstance(items[given], ToolResponseMessage):
        answered.update(r.id for r in items[given].responses)
        given += 1
    if given == len(items):
        return update
    still = [call for call in missing if call.id not in answered]
    if not still:
        return update
    results = kept_results(kept) if kept else {}
    note = ToolResponseMessage(
        responses=tuple(
            ToolResponse(id=c.id, name=c.name, response_data=results.get(c.id, UNANSWERED_TEXT))
            for c in still
        ),
        metadata=_marks(still, results),
    )
    return {**update, MESSAGES: [*items[:given], note, *items[given:]]}


def _marks(calls: Sequence[ToolCall], results: Mapping[str, str]) -> dict[str, bool]:
    """``unanswered``: some call is answered "no result"; ``kept``: some call is answered
    with the result it had when its run stopped."""
    marks: dict[str, bool] = {}
    if any(c.id not in results for c in calls):
        marks["unanswered"] = True
    if any(c.id in results for c in calls):
        marks["kept"] = True
    return marks
