"""An AG-UI ``RunAgentInput`` read as one of our runs: checked, and cut down to what the
server takes from a client (the trust model of docs/ag-ui.md).

The thread on the server is the truth. Of the messages a client sends, the ones the thread
already holds (by id) are ignored, whatever the client changed in them, and so is anything
before the last of those; of the rest (the new turn) only the user's messages are taken. An
assistant, system or developer message the client made up is dropped; a tool result is
refused, because the thread asked the client for none (it would put words in a tool's
mouth). Resume entries answer the thread's pending interrupts, by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ag_ui.core import Message, RunAgentInput, TextPart, ToolMessage, UserMessage
from pydantic import ValidationError

from ..graph import StateSnapshot
from ._http import HTTPProblem
from ._wire_messages import messages_to_wire

__all__ = ["parse_input", "run_body"]

_MAX_SHOWN = 3


def parse_input(body: Any) -> RunAgentInput:
    """``body`` as a ``RunAgentInput``; a 422 naming each field that does not fit."""
    try:
        return RunAgentInput.model_validate(body)
    except ValidationError as error:
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
            for e in error.errors()[:_MAX_SHOWN]
        ]
        more = len(error.errors()) - len(problems)
        tail = f" (and {more} more)" if more > 0 else ""
        raise HTTPProblem(
            422,
            "the body is not an AG-UI RunAgentInput (threadId, runId, messages, ...): "
            + "; ".join(problems)
            + tail,
        ) from None


def _content(message: UserMessage) -> str | list[dict[str, Any]]:
    if isinstance(message.content, str):
        return message.content
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        if not isinstance(part, TextPart):
            raise HTTPProblem(
                422,
                f"message {message.id!r}: a {part.type!r} part is not served; send the user's "
                "turn as text (a string, or text parts)",
            )
        blocks.append({"type": "text", "text": part.text})
    return blocks


def new_turn(messages: Sequence[Message], held: Sequence[Any], thread_id: str) -> list[UserMessage]:
    """The user's messages of the client's new turn: those after the last message the thread
    already holds (``held``, the thread's own). Raises a 422 for a tool result in it."""
    known = {str(wire["id"]) for wire in messages_to_wire(held, thread_id=thread_id)}
    last = max((i for i, m in enumerate(messages) if m.id in known), default=-1)
    turn: list[UserMessage] = []
    for message in messages[last + 1 :]:
        if isinstance(message, UserMessage):
            turn.append(message)
        elif isinstance(message, ToolMessage):
            raise HTTPProblem(
                422,
                f"message {message.id!r} is a tool result for call {message.tool_call_id!r}, "
                "which this thread did not leave for the client to answer: the server runs "
                "its tools and keeps their results",
            )
    return turn


def _resume(run_input: RunAgentInput, snapshot: StateSnapshot | None) -> dict[str, Any]:
    pending = [i for i in snapshot.interrupts if i.when == "during"] if snapshot else []
    ids = [i.id for i in pending]
    answers: dict[str, Any] = {}
    for entry in run_input.resume or ():
        if entry.interrupt_id not in ids:
            raise HTTPProblem(
                422,
                f"resume entry {entry.interrupt_id!r} answers no pending interrupt of thread "
                f"{run_input.thread_id!r}; pending: {ids}",
            )
        if entry.status != "resolved":
            raise HTTPProblem(
                422,
                f"resume entry {entry.interrupt_id!r} is {entry.status!r}: an interrupt of this "
                "server is answered, not abandoned (send status 'resolved' with the answer as "
                "payload; for an approval, a rejection is an answer)",
            )
        answers[entry.interrupt_id] = entry.payload
    missing = [i for i in ids if i not in answers]
    if missing:
        raise HTTPProblem(
            422, f"the resume entries leave interrupts {missing} of the thread unanswered"
        )
    return {"resume": answers}


def run_body(
    run_input: RunAgentInput, graph_id: str, snapshot: StateSnapshot | None
) -> dict[str, Any]:
    """The Agent Protocol's run request for ``run_input`` on its thread (at ``snapshot``,
    ``None`` for a new thread): a resume when it carries resume entries, else its new turn
    as input. 422 when it asks for nothing the thread can run."""
    common: dict[str, Any] = {
        "assistant_id": graph_id,
        "stream_mode": ["values"],  # the log keeps the state of each step: STATE_DELTA
        "if_not_exists": "create",
        "multitask_strategy": "reject",
        "metadata": {"ag_ui_run_id": run_input.run_id},
    }
    if run_input.resume:
        return {**common, "command": _resume(run_input, snapshot)}
    waiting = [i.id for i in snapshot.interrupts if i.when == "during"] if snapshot else []
    if waiting:
        raise HTTPProblem(
            422,
            f"thread {run_input.thread_id!r} waits for answers to interrupts {waiting}: send "
            "them as resume entries ({interruptId, status: 'resolved', payload})",
        )
    held = snapshot.values.get("messages") if snapshot else None
    turn = new_turn(
        run_input.messages, held if isinstance(held, Sequence) else (), run_input.thread_id
    )
    if not turn:
        raise HTTPProblem(
            422,
            "nothing to run: the messages hold no user message the thread does not have "
            "already (send the new user message, with an id of its own)",
        )
    wire = [{"role": "user", "content": _content(m), "id": m.id} for m in turn]
    return {**common, "input": {"messages": wire}}
