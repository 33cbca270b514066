"""What ``/mcp`` answers, apart from how it is asked: a tool's result from a run's final
values, an error result, and an interrupt as the elicitation form that asks it (and the
answer read back from the client's reply). Shared by the call itself (``_mcp``) and its
Tasks (``_mcp_tasks``); the ``mcp`` SDK is imported only when ``/mcp`` is served."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._server import Served

if TYPE_CHECKING:
    from mcp_types import CallToolResult, ElicitRequestFormParams

__all__ = [
    "ANSWER_SCHEMA",
    "METADATA",
    "answer_of",
    "error",
    "form",
    "how",
    "question",
    "result",
    "resume_body",
    "unanswered",
]

METADATA = {"via": "mcp"}  # on the run of every call
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {
            "type": "string",
            "description": "Your answer (JSON for a structured answer, such as "
            '{"decision": "approved"}).',
        }
    },
    "required": ["answer"],
}


def resume_body(served: Served, answer: Any) -> dict[str, Any]:
    """The body of the run that answers an interrupt of ``served`` with ``answer``."""
    return {
        "assistant_id": served.graph_id,
        "metadata": dict(METADATA),
        "command": {"resume": answer},
    }


def how(served: Served, thread: str) -> str:
    """How a person answers the agent's question on ``thread`` without this client."""
    return (
        f"answer it on thread {thread!r} over the Agent Protocol (langgraph-sdk: "
        f"client.runs.wait({thread!r}, {served.graph_id!r}, command={{'resume': ...}})) or "
        "on the server's page"
    )


def unanswered(served: Served, thread: str) -> str:
    """What the result says when the person did not answer (declined, dismissed)."""
    return (
        "the person did not answer the agent's question; the agent still waits: "
        f"{how(served, thread)}"
    )


def question(interrupt: Mapping[str, Any]) -> str:
    """An interrupt's value as the text of its question."""
    return json.dumps(interrupt.get("value"), ensure_ascii=False, default=str)


def form(served: Served, interrupt: Mapping[str, Any]) -> ElicitRequestFormParams:
    """The elicitation form that asks ``interrupt`` (one field, ``answer``)."""
    from mcp_types import ElicitRequestFormParams

    return ElicitRequestFormParams(
        message=f"The agent {served.graph_id} asks: {question(interrupt)}",
        requested_schema=ANSWER_SCHEMA,
    )


def answer_of(reply: Any) -> tuple[Any] | None:
    """The answer in a client's reply to a form (an ``ElicitResult``, or its JSON), as a
    1-tuple (read as JSON when it parses); ``None`` when the person did not answer."""
    if isinstance(reply, Mapping):
        action, content = reply.get("action"), reply.get("content")
    else:
        action, content = getattr(reply, "action", None), getattr(reply, "content", None)
    text = content.get("answer") if action == "accept" and isinstance(content, dict) else None
    if not isinstance(text, str):
        return None
    try:
        return (json.loads(text),)
    except ValueError:
        return (text,)


def result(values: Mapping[str, Any], meta: dict[str, Any]) -> CallToolResult:
    """The tool's result of a run that ended with ``values`` (``final_values``): the last
    assistant message's text, the structured output (an agent's ``output_type``) as
    structured content; a failed run as an error result."""
    from mcp_types import CallToolResult, TextContent

    if "__error__" in values:
        failure = values["__error__"]
        return error(f"the run failed: {failure.get('message', failure)}", meta)
    structured = values.get("structured_response")
    if structured is not None and not isinstance(structured, dict):
        structured = {"result": structured}
    text = next(
        (
            _text(m.get("content"))
            for m in reversed(values.get("messages") or [])
            if isinstance(m, dict) and m.get("type") == "ai"
        ),
        None,
    )
    if text is None:
        text = json.dumps(structured if structured is not None else values, default=str)
    return CallToolResult(
        content=[TextContent(text=text)], structured_content=structured, _meta=meta
    )


def _text(content: Any) -> str:
    """A message's content (a string or a list of parts) as text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def error(text: str, meta: dict[str, Any] | None = None) -> CallToolResult:
    """A tool result with ``isError``: what the model (or person) calling can read."""
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(text=text)], is_error=True, _meta=meta)
