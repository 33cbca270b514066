"""graph_agent.server._wire_stream: stream modes, run events as JSON, and server-sent events'
bytes, read back by the SDK's own SSE decoder.
"""

from __future__ import annotations

import pytest
from langgraph_sdk import schema
from langgraph_sdk.sse import BytesLineDecoder, SSEDecoder

from graph_agent import RunnableConfig
from graph_agent.server._wire_stream import (
    HEARTBEAT,
    STREAM_MODES,
    event_name,
    parse_stream_modes,
    run_event_to_wire,
    sse_event,
)

from .wire_kit import careful_agent, json_clean


def decode(body: bytes, chunk: int = 7) -> list[schema.StreamPart]:
    """``body`` read by the SDK's own SSE parser, fed in small pieces as a socket would."""
    lines = BytesLineDecoder()
    decoder = SSEDecoder()
    parts = []
    for at in range(0, len(body), chunk):
        for line in lines.decode(body[at : at + chunk]):
            part = decoder.decode(bytes(line).rstrip(b"\n"))
            if part is not None:
                parts.append(part)
    for line in lines.flush():
        part = decoder.decode(bytes(line))
        if part is not None:
            parts.append(part)
    return parts


def test_sse_bytes_parse_in_the_client() -> None:
    body = (
        sse_event("metadata", {"run_id": "r", "attempt": 1})
        + HEARTBEAT
        + sse_event("values|sub:1", {"text": "two\nlines é"}, id="5")
        + sse_event("bad\nname", [1, None])
    )
    assert body.startswith(b'event: metadata\r\ndata: {"run_id":"r","attempt":1}\r\n\r\n')
    parts = decode(body)
    assert [(p.event, p.data, p.id) for p in parts] == [
        ("metadata", {"run_id": "r", "attempt": 1}, None),
        ("values|sub:1", {"text": "two\nlines é"}, "5"),
        ("badname", [1, None], "5"),  # the last id stays, as the SSE spec says
    ]
    with pytest.raises(ValueError):
        sse_event("values", {"x": float("nan")})  # to_jsonable first


def test_stream_modes() -> None:
    assert parse_stream_modes(None) == ["values"]
    assert parse_stream_modes("") == ["values"]
    assert parse_stream_modes("updates") == ["updates"]
    assert parse_stream_modes('["values","messages-tuple"]') == ["values", "messages-tuple"]
    assert parse_stream_modes(["values", "values", "custom"]) == ["values", "custom"]
    assert parse_stream_modes(None, default=sorted(STREAM_MODES)) == sorted(STREAM_MODES)
    with pytest.raises(ValueError, match="'run_events' streams graph-agent's own"):
        parse_stream_modes(["values", "events"])
    with pytest.raises(ValueError, match="only supported on the v2"):
        parse_stream_modes("tools")
    with pytest.raises(ValueError, match="unknown stream_mode 'nope'"):
        parse_stream_modes("nope")
    assert event_name("values", ("sub:1", "inner:2"), subgraphs=True) == "values|sub:1|inner:2"
    assert event_name("values", ("sub:1",)) == "values"


def test_run_events_are_json() -> None:
    agent = careful_agent()
    config = RunnableConfig(thread_id="events")
    for event in agent.stream_events("Weather in Rome?", config):
        data = json_clean(run_event_to_wire(event, thread_id="events"))
        assert data["kind"] == event.kind and data["namespace"] == list(event.namespace)
        if event.kind == "interrupt":
            assert set(data["interrupt"]) == {"value", "id", "node", "when", "namespace"}
        if event.kind == "model_start":
            assert data["messages"][-1]["type"] == "human"
