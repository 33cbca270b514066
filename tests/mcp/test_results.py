"""What the model gets back for each kind of MCP tool result."""

from __future__ import annotations

import base64
import json

from mcp import types

from graph_agent.mcp._results import result_text as result_text_of_wire
from tests.mcp._support import wire


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def result_text(result: types.CallToolResult) -> str:
    """What the model gets for ``result``, which reaches the provider in its wire form."""
    return result_text_of_wire(wire(result))


def test_text_parts_are_joined_by_newlines() -> None:
    result = types.CallToolResult(content=[text("first"), text("second")])
    assert result_text(result) == "first\nsecond"


def test_structured_content_is_the_json_when_there_is_no_text() -> None:
    result = types.CallToolResult(content=[], structuredContent={"temp": 21.5, "city": "Zürich"})
    assert json.loads(result_text(result)) == {"temp": 21.5, "city": "Zürich"}
    assert "Zürich" in result_text(result)  # readable, not \\u-escaped


def test_the_text_wins_over_structured_content_that_repeats_it() -> None:
    result = types.CallToolResult(
        content=[text('{"temp": 21.5}')], structuredContent={"temp": 21.5}
    )
    assert result_text(result) == '{"temp": 21.5}'


def test_images_and_audio_are_a_note_with_their_type_and_size() -> None:
    png = base64.b64encode(b"x" * 1234).decode()
    result = types.CallToolResult(
        content=[
            types.ImageContent(type="image", data=png, mimeType="image/png"),
            types.AudioContent(
                type="audio", data=base64.b64encode(b"abc").decode(), mimeType="audio/mpeg"
            ),
        ]
    )
    assert result_text(result) == "[image: image/png, 1234 bytes]\n[audio: audio/mpeg, 3 bytes]"


def test_resources_give_their_text_or_a_note() -> None:
    result = types.CallToolResult(
        content=[
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///a.txt", text="hello"),
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(uri="file:///b.bin", blob="AAAA"),
            ),
            types.ResourceLink(type="resource_link", uri="https://example.com/r", name="report"),
        ]
    )
    assert result_text(result).splitlines() == [
        "hello",
        "[resource file:///b.bin: unknown type, 3 bytes]",
        "[resource link https://example.com/r: report]",
    ]
