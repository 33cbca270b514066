"""A2A's streams (``SendStreamingMessage``, ``SubscribeToTask``) written as the Agent
Protocol's stream is: each event a JSON-RPC answer in a server-sent event (an error's named
``error``), the events of one read of the run's log in one write, a heartbeat comment each
time the run is quiet for the server's heartbeat.

The answer's chunks, most of a stream's events, are put in JSON here (``text_chunk``): the
JSON ``a2a-sdk`` writes for them (protobuf's JSON mapping), at a fraction of its cost. Every
other event goes through the SDK's own conversion."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, MutableMapping
from typing import Any

from a2a.server.jsonrpc_models import InternalError
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.types import TaskArtifactUpdateEvent
from a2a.utils import proto_utils
from a2a.utils.errors import A2AError
from google.protobuf.json_format import MessageToDict

from ._a2a_stream import MORE_IN_BATCH, QUIET
from ._wire_stream import HEARTBEAT

__all__ = ["QUIET_ANSWER", "answers", "event_answer", "sse_frames", "text_chunk"]

_log = logging.getLogger("graph_agent.server")

QUIET_ANSWER: dict[str, Any] = {}
"""What ``answers`` yields for a quiet moment (known by its identity): a heartbeat."""


def text_chunk(event: Any) -> dict[str, Any] | None:
    """``event`` as ``StreamResponse``'s JSON, if it is an artifact update whose parts are
    text alone (an answer's chunk); else ``None``. As protobuf's JSON mapping writes it: the
    fields in their order, those at their default value left out."""
    if type(event) is not TaskArtifactUpdateEvent or event.HasField("metadata"):
        return None
    artifact = event.artifact
    if artifact.description or artifact.extensions or artifact.HasField("metadata"):
        return None
    parts = []
    for part in artifact.parts:
        if (
            part.WhichOneof("content") != "text"
            or part.filename
            or part.media_type
            or part.HasField("metadata")
        ):
            return None
        parts.append({"text": part.text})
    update: dict[str, Any] = {}
    if event.task_id:
        update["taskId"] = event.task_id
    if event.context_id:
        update["contextId"] = event.context_id
    if event.HasField("artifact"):
        said: dict[str, Any] = {}
        if artifact.artifact_id:
            said["artifactId"] = artifact.artifact_id
        if artifact.name:
            said["name"] = artifact.name
        if parts:
            said["parts"] = parts
        update["artifact"] = said
    if event.append:
        update["append"] = True
    if event.last_chunk:
        update["lastChunk"] = True
    return {"artifactUpdate": update}


def event_answer(event: Any, request_id: str | int | None) -> dict[str, Any]:
    """The JSON-RPC answer carrying one streamed event, as ``a2a-sdk`` writes it."""
    result = text_chunk(event)
    if result is None:
        response = proto_utils.to_stream_response(event)
        result = MessageToDict(response, preserving_proto_field_name=False)
    return {"result": result, "id": request_id, "jsonrpc": "2.0"}


def _frame(answer: dict[str, Any]) -> bytes:
    data = json.dumps(answer, ensure_ascii=False).encode()
    return (b"event: error\r\n" if "error" in answer else b"") + b"data: " + data + b"\r\n\r\n"


async def answers(
    events: AsyncGenerator[Any], first: Any, request_id: str | int | None
) -> AsyncGenerator[dict[str, Any]]:
    """``first`` (already read, if not ``None``), then the rest of ``events``, each as its
    JSON-RPC answer, ``QUIET_ANSWER`` for a quiet moment (``QUIET``); a protocol error ends
    them as its JSON-RPC error."""
    try:
        if first is not None:
            yield event_answer(first, request_id)
        async for event in events:
            yield QUIET_ANSWER if event is QUIET else event_answer(event, request_id)
    except A2AError as error:
        yield build_error_response(request_id, error)
    finally:
        await events.aclose()


async def sse_frames(
    stream: AsyncGenerator[dict[str, Any]], state: MutableMapping[str, Any]
) -> AsyncIterator[bytes]:
    """The answers of ``stream`` as SSE: those of one batch (``state[MORE_IN_BATCH]`` says
    another is ready behind the one just read) in one write; a heartbeat comment for a
    quiet moment."""
    frames: list[bytes] = []
    try:
        async for answer in stream:
            if answer is QUIET_ANSWER:
                yield HEARTBEAT
                continue
            frames.append(_frame(answer))
            if not state.get(MORE_IN_BATCH):
                yield b"".join(frames)
                frames = []
    except Exception as error:  # the handler hides its own faults: this one is not ours
        _log.error("an A2A stream failed", exc_info=error)
        internal = InternalError(message="An internal error occurred")
        frames.append(_frame(build_error_response(state.get("request_id"), internal)))
    finally:
        await stream.aclose()
    if frames:
        yield b"".join(frames)
