"""How an A2A stream is written (graph_agent/server/_a2a_sse.py): each event the JSON-RPC
answer ``a2a-sdk`` would write for it (the answer's chunks put in JSON by us, the same JSON),
and a heartbeat comment while a task is quiet, read over plain HTTP from a real uvicorn."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest

from graph_agent.server import create_app
from tests._needs import need_module

from .conftest import live_server
from .gate_kit import Gate

need_module("a2a.types", "the a2a extra: pip install 'graph-agent[a2a]' (make test)")

from a2a.helpers.proto_helpers import new_data_part  # noqa: E402
from a2a.types import (  # noqa: E402
    Artifact,
    Part,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils import proto_utils  # noqa: E402
from google.protobuf.json_format import MessageToDict  # noqa: E402
from jsonrpc.jsonrpc2 import JSONRPC20Response  # noqa: E402

from graph_agent.server._a2a_sse import EventFrames, event_answer, text_chunk  # noqa: E402


def chunk(*parts: Part, **fields: Any) -> TaskArtifactUpdateEvent:
    artifact = fields.pop("artifact", None) or Artifact(
        artifact_id="t-result", name=fields.pop("name", "result"), parts=list(parts)
    )
    ids = {"task_id": "t", "context_id": "c", **fields}
    return TaskArtifactUpdateEvent(artifact=artifact, **ids)


def sdk_answer(event: Any, request_id: Any) -> Any:
    """What ``a2a-sdk``'s dispatcher writes for a streamed event."""
    result = MessageToDict(proto_utils.to_stream_response(event), preserving_proto_field_name=False)
    return JSONRPC20Response(result=result, _id=request_id).data


TEXT_CHUNKS = [
    chunk(Part(text="Hello ")),
    chunk(Part(text="wörld ✓"), append=True),
    chunk(Part(text="end"), append=True, last_chunk=True),
    chunk(Part(text="")),
    chunk(Part(text="a"), Part(text="b"), name=""),
    chunk(artifact=Artifact()),
    TaskArtifactUpdateEvent(task_id="t", context_id="c"),
]
OTHER_EVENTS = [
    chunk(Part(text="x", media_type="text/plain")),
    chunk(new_data_part({"a": 1})),
    chunk(Part(url="https://example.com/f.txt", filename="f.txt")),
    chunk(artifact=Artifact(artifact_id="a", description="the answer", parts=[Part(text="x")])),
    TaskStatusUpdateEvent(
        task_id="t", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_WORKING)
    ),
]


@pytest.mark.parametrize("event", TEXT_CHUNKS)
def test_an_answer_chunk_is_put_in_the_json_the_sdk_writes(event: Any) -> None:
    assert text_chunk(event) == sdk_answer(event, 1)["result"]
    assert event_answer(event, "r-1") == sdk_answer(event, "r-1")
    assert json.dumps(event_answer(event, 7)) == json.dumps(sdk_answer(event, 7))


@pytest.mark.parametrize("event", OTHER_EVENTS)
def test_every_other_event_goes_through_the_sdk(event: Any) -> None:
    assert text_chunk(event) is None
    assert event_answer(event, 3) == sdk_answer(event, 3)


def sdk_frame(event: Any, request_id: Any) -> bytes:
    data = json.dumps(sdk_answer(event, request_id), ensure_ascii=False)
    return f"data: {data}\r\n\r\n".encode()


@pytest.mark.parametrize("request_id", ["s-1", 7, None])
def test_a_streams_frames_are_the_json_the_sdk_writes_byte_for_byte(request_id: Any) -> None:
    """The JSON around a chunk's text, made once per stream, holds whatever text comes in
    (quotes, escapes, non-ASCII, the text of the spot it was made with) and each chunk's
    own flags and ids."""
    texts = ["Hello ", 'a "quoted" \\ word\n', "wörld ✓ ", "", "\x00chunk\x00", "end"]
    events = [chunk(Part(text=t), append=i > 0) for i, t in enumerate(texts)]
    events += [
        chunk(Part(text="last"), append=True, last_chunk=True),
        chunk(Part(text="other task"), task_id="t2"),
        *TEXT_CHUNKS,
        *OTHER_EVENTS,
    ]
    frames = EventFrames(request_id)
    for event in events:
        assert frames.frame(event) == sdk_frame(event, request_id), event


def test_a_quiet_stream_sends_heartbeats_then_its_events() -> None:
    gate = Gate()
    app = create_app({"held": gate.agent("held")}, heartbeat=0.05)
    gate.watch(app)
    gate.close()
    call = {
        "jsonrpc": "2.0",
        "id": "s-1",
        "method": "SendStreamingMessage",
        "params": {
            "message": {
                "messageId": uuid.uuid4().hex,
                "role": "ROLE_USER",
                "parts": [{"text": "wait"}],
            }
        },
    }
    with live_server(app) as url, httpx.Client(timeout=20) as http:
        seen: list[str] = []
        with http.stream("POST", f"{url}/a2a/held", json=call, headers={"A2A-Version": "1.0"}) as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            for line in r.iter_lines():
                if line.startswith(":"):
                    seen.append("heartbeat")
                    if seen.count("heartbeat") == 2:
                        gate.open()  # the task goes on once the client has heard it
                elif line.startswith("data:"):
                    answer = json.loads(line[5:])
                    assert answer["id"] == "s-1" and "error" not in answer, answer
                    seen.append(next(iter(answer["result"])))
    assert seen[0] == "task" and "heartbeat" in seen[1:3]
    assert seen[-1] == "statusUpdate" and "artifactUpdate" in seen


def test_the_chunk_fast_path_knows_every_field_of_what_it_writes() -> None:
    """``text_chunk`` reads these fields only: a field an SDK upgrade adds fails here,
    not silently on the wire."""
    fields = {
        cls.__name__: {f.name for f in cls.DESCRIPTOR.fields}
        for cls in (TaskArtifactUpdateEvent, Artifact, Part)
    }
    assert fields == {
        "TaskArtifactUpdateEvent": {
            "task_id", "context_id", "artifact", "append", "last_chunk", "metadata"
        },
        "Artifact": {"artifact_id", "name", "description", "parts", "metadata", "extensions"},
        "Part": {"text", "raw", "url", "data", "metadata", "filename", "media_type"},
    }  # fmt: skip
