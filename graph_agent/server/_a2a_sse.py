"""A2A's streams (``SendStreamingMessage``, ``SubscribeToTask``) written as the Agent
Protocol's stream is: each event a JSON-RPC answer in a server-sent event (an error's named
``error``), the events of one read of the run's log in one write, a heartbeat comment each
time the run is quiet for the server's heartbeat.

The answer's chunks, most of a stream's events, are put in JSON here (``text_chunk``): the
JSON ``a2a-sdk`` writes for them (protobuf's JSON mapping), at a fraction of its cost; within
a stream, the JSON around a chunk's text is made once (``EventFrames``). Every other event
goes through the SDK's own conversion."""

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

__all__ = ["EventFrames", "answers", "event_answer", "sse_frames", "text_chunk"]

_log = logging.getLogger("graph_agent.server")


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


_SPOT = "\x00chunk\x00"  # where a chunk's text goes, in the JSON made once around it
_SPOT_JSON = json.dumps(_SPOT).encode()


class EventFrames:
    """The SSE frames of one stream's events. A chunk of the answer (one text part) differs
    from the stream's other chunks in its text alone, once its flags are the same: the JSON
    around the text is made once (``event_answer``'s, so the same bytes) and each chunk's
    text put in it, where encoding the whole answer anew cost most of a chunk's time."""

    def __init__(self, request_id: str | int | None) -> None:
        self.request_id = request_id
        self._around: dict[tuple[Any, ...], tuple[bytes, bytes] | None] = {}

    def frame(self, event: Any) -> bytes:
        """``event``'s answer as one server-sent event."""
        said = _one_text(event)
        if said is None:
            return _frame(event_answer(event, self.request_id))
        key, text = said
        if key not in self._around:
            self._around[key] = self._around_text(event)
        around = self._around[key]
        if around is None:
            return _frame(event_answer(event, self.request_id))
        return around[0] + json.dumps(text, ensure_ascii=False).encode() + around[1]

    def _around_text(self, event: Any) -> tuple[bytes, bytes] | None:
        answer = event_answer(event, self.request_id)
        answer["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"] = _SPOT
        halves = _frame(answer).split(_SPOT_JSON)
        return (halves[0], halves[1]) if len(halves) == 2 else None


def _one_text(event: Any) -> tuple[tuple[Any, ...], str] | None:
    """For a chunk whose one part is text alone: what its frame's JSON holds besides the
    text (its key in ``EventFrames``) and the text; else ``None``."""
    if type(event) is not TaskArtifactUpdateEvent or event.HasField("metadata"):
        return None
    artifact = event.artifact
    if len(artifact.parts) != 1 or artifact.description or artifact.extensions:
        return None
    part = artifact.parts[0]
    if (
        artifact.HasField("metadata")
        or part.WhichOneof("content") != "text"
        or part.filename
        or part.media_type
        or part.HasField("metadata")
    ):
        return None
    key = (
        event.task_id,
        event.context_id,
        artifact.artifact_id,
        artifact.name,
        event.append,
        event.last_chunk,
    )
    return key, part.text


async def answers(
    events: AsyncGenerator[Any], first: Any, request_id: str | int | None
) -> AsyncGenerator[bytes]:
    """``first`` (already read, if not ``None``), then the rest of ``events``, each as the
    server-sent event of its JSON-RPC answer, ``HEARTBEAT`` for a quiet moment (``QUIET``);
    a protocol error ends them as its JSON-RPC error."""
    frames = EventFrames(request_id)
    try:
        if first is not None:
            yield frames.frame(first)
        async for event in events:
            yield HEARTBEAT if event is QUIET else frames.frame(event)
    except A2AError as error:
        yield _frame(build_error_response(request_id, error))
    finally:
        await events.aclose()


async def sse_frames(
    stream: AsyncGenerator[bytes], state: MutableMapping[str, Any]
) -> AsyncIterator[bytes]:
    """The frames of ``stream`` (``answers``), those of one batch (``state[MORE_IN_BATCH]``
    says another is ready behind the one just read) in one write; a heartbeat alone."""
    frames: list[bytes] = []
    try:
        async for frame in stream:
            if frame is HEARTBEAT:
                yield HEARTBEAT
                continue
            frames.append(frame)
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
