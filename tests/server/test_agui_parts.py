"""A user message with image, audio, video or document parts over a real uvicorn: our
messages hold text, so each file is named on a line of its own in the text the model reads
and kept in the message's ``metadata["files"]`` (as A2A keeps files); the messages snapshot
gives the parts back. A part we cannot carry (a provider's file id, bytes that are not
base64) is a 422 naming it and what is accepted."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from ag_ui.core import EventType
from langgraph_sdk import get_sync_client

from checkpoint import MemorySaver
from graph_agent import AssistantMessage, FunctionChatModel, Prompt, ReactAgent
from graph_agent.server import create_app

from .conftest import live_server
from .test_agui import ag_ui, run_input

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(60)).decode("ascii")  # 68 bytes


@pytest.fixture
def seen() -> list[str]:
    return []


@pytest.fixture
def url(seen: list[str]) -> Iterator[str]:
    def reply(prompt: Prompt) -> AssistantMessage:
        seen.append(prompt.messages[-1].text)
        return AssistantMessage("Nice picture.")

    agent = ReactAgent(name="eyes", model=FunctionChatModel(reply), saver=MemorySaver())
    with live_server(create_app({"eyes": agent})) as base:
        yield base


def test_an_image_is_named_for_the_model_kept_and_given_back(url: str, seen: list[str]) -> None:
    thread = str(uuid.uuid4())
    content = [
        {"type": "text", "text": "What is in this picture?"},
        {
            "type": "image",
            "source": {"type": "data", "value": PNG, "mimeType": "image/png"},
            "metadata": {"filename": "cat.png"},
        },
        {"type": "text", "text": "And this one?"},
        {
            "type": "document",
            "source": {"type": "url", "value": "https://example.com/report.pdf"},
        },
    ]
    message = {"id": "u1", "role": "user", "content": content}
    events = ag_ui(url, "eyes", run_input(thread, [message]))
    assert seen == [
        "What is in this picture?\n"
        '[file cat.png (image/png, 68 bytes): metadata["files"][0]]\n'
        "And this one?\n"
        "[file (unnamed) (application/pdf): https://example.com/report.pdf]"
    ]
    with get_sync_client(url=url) as client:
        held = client.threads.get_state(thread)["values"]["messages"][0]
    assert held["response_metadata"]["files"] == [
        {"name": "cat.png", "media_type": "image/png", "bytes": PNG},
        {"name": "", "media_type": "application/pdf", "url": "https://example.com/report.pdf"},
    ]
    snapshot = next(e for e in events if e.type == EventType.MESSAGES_SNAPSHOT).messages
    given_back = snapshot[0].model_dump(by_alias=True, exclude_none=True)["content"]
    content[3]["source"]["mimeType"] = "application/pdf"  # guessed from the URL
    assert given_back == content
    assert snapshot[1].content == "Nice picture."


@pytest.mark.parametrize(
    ("part", "words"),
    [
        (
            {
                "type": "image",
                "source": {"type": "file", "value": "file-abc", "provider": "openai"},
            },
            "message 'u1', part 1 (image): a 'file' source (an id of a file kept by openai) "
            "cannot be read by this server; send the file's bytes or its URL instead (accepted: "
            "text parts, and image, audio, video or document parts whose source is 'data' "
            "(base64 bytes with their mimeType) or 'url')",
        ),
        (
            {
                "type": "audio",
                "source": {"type": "data", "value": "not base64!", "mimeType": "a/b"},
            },
            "message 'u1', part 1 (audio): source.value is not base64 text (a 'data' source "
            "carries the bytes)",
        ),
    ],
)
def test_a_part_that_cannot_be_carried_is_a_422_naming_it(
    url: str, seen: list[str], part: dict[str, Any], words: str
) -> None:
    message = {"id": "u1", "role": "user", "content": [{"type": "text", "text": "look"}, part]}
    body = run_input(str(uuid.uuid4()), [message])
    response = httpx.post(f"{url}/ag-ui/eyes", json=body, timeout=10)
    assert response.status_code == 422, response.text
    assert response.json()["detail"] == words
    assert seen == []  # no run started
