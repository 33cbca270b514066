"""Files and data sent to a served agent over A2A, with ``a2a-sdk``'s client on a real
uvicorn: the model reads each file and value named on a line of the user's message, and the
thread keeps them in the message's metadata (``graph_agent.messages.FILES``/``DATA``), as
``RemoteA2AAgent`` keeps a remote's; an answer to a question cannot carry a file."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from checkpoint import MemorySaver
from graph_agent import FunctionChatModel, Prompt, ReactAgent
from graph_agent.server import create_app
from tests._needs import need_module

from .conftest import live_server
from .test_a2a_server import a2a, greeter, send

need_module("a2a.client", "the a2a extra: pip install 'graph-agent[a2a]' (make test)")

from a2a.helpers.proto_helpers import new_data_part  # noqa: E402
from a2a.types import Message, Part, Role, TaskState  # noqa: E402
from a2a.utils.errors import ContentTypeNotSupportedError  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n0123"


def reader() -> ReactAgent:
    """Answers with the text of the user's message, as its model read it."""

    def read(prompt: Prompt) -> str:
        return f"read: {prompt.messages[-1].text}"

    return ReactAgent(name="reader", model=FunctionChatModel(read), saver=MemorySaver())


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with live_server(create_app({"reader": reader(), "greeter": greeter()})) as base:
        yield base


def message(*parts: Part, task_id: str = "") -> Message:
    return Message(message_id="m-files", role=Role.ROLE_USER, parts=list(parts), task_id=task_id)


def test_files_and_data_reach_the_model_named_and_stay_in_the_thread(url: str) -> None:
    parts = [
        Part(text="what is in these?"),
        Part(raw=PNG, filename="cat.png", media_type="image/png"),
        Part(url="https://example.com/report.pdf", filename="report.pdf"),
        new_data_part({"order": 42}),
    ]

    async def scenario() -> Any:
        async with a2a(url, "reader") as client:
            [answer] = await send(client, message(*parts))
            return answer.task

    task = asyncio.run(scenario())
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    said = "".join(p.text for a in task.artifacts for p in a.parts)
    assert said == (
        "read: what is in these?\n"
        '[file cat.png (image/png, 12 bytes): metadata["files"][0]]\n'
        "[file report.pdf (unknown type): https://example.com/report.pdf]\n"
        '{"order": 42}'
    )
    client = get_sync_client(url=url)
    try:
        state = client.threads.get_state(task.context_id)
    finally:
        client.close()
    values: Any = state["values"]
    user = values["messages"][0]
    assert user["type"] == "human"
    assert user["response_metadata"]["files"] == [
        {"name": "cat.png", "media_type": "image/png", "bytes": base64.b64encode(PNG).decode()},
        {"name": "report.pdf", "media_type": "", "url": "https://example.com/report.pdf"},
    ]
    assert user["response_metadata"]["data"] == [{"order": 42}]


def test_an_answer_to_a_question_cannot_carry_a_file(url: str) -> None:
    async def scenario() -> tuple[Any, str]:
        async with a2a(url, "greeter") as client:
            start = new_data_part({"title": "Dr"})
            [asked] = await send(client, message(start))
            file = Part(url="https://example.com/name.txt")
            with pytest.raises(ContentTypeNotSupportedError) as refused:
                await send(client, message(file, task_id=asked.task.id))
            return asked.task, str(refused.value)

    asked, refused = asyncio.run(scenario())
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "parts[0] is a file" in refused and "text or one data part" in refused
