"""An AG-UI ``RunAgentInput`` read as one of our runs: checked, and cut down to what the
server takes from a client (the trust model of docs/ag-ui.md).

The thread on the server is the truth. Of the messages a client sends, the ones the thread
already holds (by id) are ignored, whatever the client changed in them, and so is anything
before the last of those; of the rest (the new turn) only the user's messages are taken, and
the results of the front-end tool calls the thread waits for. An assistant, system or
developer message the client made up is dropped; any other tool result is refused (it would
put words in a tool's mouth). Resume entries answer the thread's pending interrupts, by id:
a resolved one with its payload, a cancelled one with what declining means to the pause
(``_agui_resume``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ag_ui.core import Message, RunAgentInput, TextPart, ToolMessage, UserMessage
from pydantic import ValidationError

from ..graph import Interrupt, StateSnapshot
from ..messages import FILES
from ._agui_parts import user_content
from ._agui_resume import cancelled_answer, resolved_answer
from ._agui_tools import CLIENT_TOOLS_KEY, is_client_call
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


def _user_wire(message: UserMessage) -> dict[str, Any]:
    """A user message of the new turn as the Agent Protocol takes it: its text, and its
    files in ``metadata["files"]`` (``_agui_parts``)."""
    if isinstance(message.content, str):
        return {"role": "user", "content": message.content, "id": message.id}
    text, files = user_content(message.id, message.content)
    wire: dict[str, Any] = {"role": "user", "content": text, "id": message.id}
    if files:
        wire["response_metadata"] = {FILES: files}
    return wire


def _text_of(message: ToolMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(p.text for p in message.content if isinstance(p, TextPart))


def new_turn(
    messages: Sequence[Message], held: Sequence[Any], thread_id: str, asked: Mapping[str, str]
) -> tuple[list[UserMessage], dict[str, str]]:
    """The client's new turn (the messages after the last one the thread already holds,
    ``held``): its user messages, and the results of the front-end tool calls the thread
    waits for (``asked``: call id -> interrupt id), as answers by interrupt id. A 422 for a
    tool result the thread did not ask the client for."""
    known = {str(wire["id"]) for wire in messages_to_wire(held, thread_id=thread_id)}
    last = max((i for i, m in enumerate(messages) if m.id in known), default=-1)
    turn: list[UserMessage] = []
    answers: dict[str, str] = {}
    for message in messages[last + 1 :]:
        if isinstance(message, UserMessage):
            turn.append(message)
        elif isinstance(message, ToolMessage):
            if message.tool_call_id not in asked:
                raise HTTPProblem(
                    422,
                    f"message {message.id!r} is a tool result for call "
                    f"{message.tool_call_id!r}, which this thread did not leave for the "
                    "client to answer: the server runs its tools and keeps their results",
                )
            answers[asked[message.tool_call_id]] = _text_of(message)
    return turn, answers


def _resume(run_input: RunAgentInput, pending: Sequence[Interrupt]) -> dict[str, Any]:
    """The answers of the resume entries, by interrupt id: a resolved entry's payload, or
    what a cancelled one means to the pause it answers (``cancelled_answer``)."""
    by_id = {pause.id: pause for pause in pending}
    answers: dict[str, Any] = {}
    for entry in run_input.resume or ():
        pause = by_id.get(entry.interrupt_id)
        if pause is None:
            raise HTTPProblem(
                422,
                f"resume entry {entry.interrupt_id!r} answers no pending interrupt of thread "
                f"{run_input.thread_id!r}; pending: {list(by_id)}",
            )
        if entry.status == "resolved":
            try:
                answers[pause.id] = resolved_answer(pause.value, entry.payload)
            except ValueError as error:
                raise HTTPProblem(422, f"resume entry {pause.id!r}: {error}") from None
        elif entry.payload is not None:
            raise HTTPProblem(
                422,
                f"resume entry {entry.interrupt_id!r} is 'cancelled' and carries a payload: a "
                "cancelled entry declines the request (leave the payload out); to answer it, "
                "send status 'resolved' with the answer as payload",
            )
        else:
            try:
                answers[pause.id] = cancelled_answer(pause.id, pause.value, entry.metadata)
            except ValueError as error:
                raise HTTPProblem(
                    422, f"resume entry {pause.id!r} is 'cancelled': {error}"
                ) from None
    return answers


def _client_tools(run_input: RunAgentInput, own: Collection[str]) -> list[dict[str, Any]]:
    declared = []
    for declared_tool in run_input.tools or ():
        if declared_tool.name in own:
            raise HTTPProblem(
                422,
                f"tool {declared_tool.name!r}: the agent has a tool of that name already; "
                "give the front-end tool another name",
            )
        declared.append(
            {
                "name": declared_tool.name,
                "description": declared_tool.description,
                "parameters": declared_tool.parameters,
            }
        )
    return declared


def run_body(
    run_input: RunAgentInput,
    graph_id: str,
    snapshot: StateSnapshot | None,
    own_tools: Collection[str] = (),
) -> dict[str, Any]:
    """The Agent Protocol's run request for ``run_input`` on its thread (at ``snapshot``,
    ``None`` for a new thread): a resume when it answers the thread's pauses (resume
    entries; tool results for the front-end tool calls it waits for), else its new user
    turn as input. The client's tools go in the run's context (``ClientTools`` offers them;
    a name of the agent's ``own_tools`` is refused). 422 when it asks for nothing the
    thread can run."""
    common: dict[str, Any] = {
        "assistant_id": graph_id,
        "stream_mode": ["values"],  # the log keeps the state of each step: STATE_DELTA
        "if_not_exists": "create",
        "multitask_strategy": "reject",
        "metadata": {"ag_ui_run_id": run_input.run_id},
    }
    tools = _client_tools(run_input, own_tools)
    if tools:
        common["context"] = {CLIENT_TOOLS_KEY: tools}
    pending = [i for i in snapshot.interrupts if i.when == "during"] if snapshot else []
    ids = [i.id for i in pending]
    asked = {str(i.value.get("tool_call_id")): i.id for i in pending if is_client_call(i.value)}
    held = snapshot.values.get("messages") if snapshot else None
    turn, answers = new_turn(
        run_input.messages, held if isinstance(held, Sequence) else (), run_input.thread_id, asked
    )
    answers = {**answers, **_resume(run_input, pending)}
    if answers or pending:
        missing = [i for i in ids if i not in answers]
        if missing:
            raise HTTPProblem(
                422,
                f"thread {run_input.thread_id!r} waits for answers to interrupts {missing}: "
                "send them as resume entries ({interruptId, status: 'resolved', payload}, or "
                "{interruptId, status: 'cancelled'} to decline one), and a front-end tool "
                "call's result as a tool message",
            )
        if turn:
            raise HTTPProblem(
                422,
                f"message {turn[0].id!r}: a new user message cannot come with the answers to "
                "the thread's pauses; send it in the next run, once they are answered",
            )
        return {**common, "command": {"resume": answers}}
    if not turn:
        raise HTTPProblem(
            422,
            "nothing to run: the messages hold no user message the thread does not have "
            "already (send the new user message, with an id of its own)",
        )
    wire = [_user_wire(m) for m in turn]
    return {**common, "input": {"messages": wire}}
