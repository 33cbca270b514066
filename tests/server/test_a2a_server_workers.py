"""A2A on servers whose runs are run by workers (``graph-agent serve --queue`` and
``graph-agent worker``, real processes on one redis-server): a task streamed through one
server, and a task started through one, followed through the other and cancelled there."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._needs import need_module
from tests.redis_servers import redis_server
from tests.runs.worker_kit import fleet, wait_for

need_module("a2a.client", "the a2a extra: pip install 'graph-agent[a2a]' (make test)")
need_module("docket", "the queue extra: pip install -e '.[queue]' (make test)")

from a2a.types import (  # noqa: E402
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)

from .test_a2a_server import a2a  # noqa: E402


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:  # a server of its own: queues never mix
    with redis_server(tmp_path / "redis") as port:
        yield f"redis://127.0.0.1:{port}/0"


def said(text: str, *, now: bool = False) -> SendMessageRequest:
    message = Message(message_id=text, role=Role.ROLE_USER, parts=[Part(text=text)])
    return SendMessageRequest(
        message=message, configuration=SendMessageConfiguration(return_immediately=now)
    )


def test_tasks_run_by_workers_are_streamed_followed_and_cancelled_through_any_server(
    tmp_path: Path, redis_url: str
) -> None:
    async def streamed(first: str) -> list[StreamResponse]:
        async with a2a(first, "recorder", streaming=True) as client:
            return [event async for event in client.send_message(said("s:1"))]

    async def started(first: str) -> Task:
        async with a2a(first, "recorder") as client:
            [answer] = [event async for event in client.send_message(said("c:1:stop", now=True))]
            return answer.task

    async def followed(second: str, task: Task) -> tuple[list[StreamResponse], Task]:
        async with (
            a2a(second, "recorder", streaming=True) as watcher,
            a2a(second, "recorder") as canceller,
        ):
            events = watcher.subscribe(SubscribeToTaskRequest(id=task.id))
            seen = [await anext(events)]  # following it, before the cancel
            cancelled = await canceller.cancel_task(CancelTaskRequest(id=task.id))
            seen.extend([event async for event in events])
            return seen, cancelled

    with fleet(redis_url, tmp_path) as f:
        first, second = f.serve(), f.serve()
        f.worker()
        stream = asyncio.run(streamed(first))
        task = asyncio.run(started(first))
        board = f.board()
        wait_for(lambda: board.get("victim:c:1:stop"), "the run in its model call, on the worker")
        board.close()
        seen, cancelled = asyncio.run(followed(second, task))

    assert stream[0].task.status.state in (
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
    )
    assert stream[-2].artifact_update.last_chunk
    chunks = [e.artifact_update for e in stream if e.HasField("artifact_update")]
    assert "".join(c.artifact.parts[0].text for c in chunks) == "done s:1"
    assert stream[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert seen[0].task.id == task.id
    assert seen[0].task.status.state == TaskState.TASK_STATE_WORKING
    assert seen[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
