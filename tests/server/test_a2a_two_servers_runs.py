"""Two servers on one Redis, each running the tasks it accepts in its own process (no
``--queue``), answer for each other's A2A tasks while they work: a task working on the
first is followed to its end by a subscriber of the second (``SubscribeToTask``) and
cancelled there (``CancelTask``)."""

from __future__ import annotations

import asyncio

from langgraph_sdk import get_client

from tests._needs import need_module

from .test_a2a_server import a2a, says, send, text_of
from .test_two_servers import Gate, two_servers
from .test_two_servers_runs import entered

need_module("a2a.client", "the a2a extra: pip install 'graph-agent[a2a]' (make test)")

from a2a.types import (  # noqa: E402
    CancelTaskRequest,
    GetTaskRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)


def test_a_task_working_on_one_server_is_followed_to_its_end_on_the_other(
    redis_url: str,
) -> None:
    async def scenario(first: str, second: str, gate: Gate) -> tuple[list[StreamResponse], Task]:
        async with a2a(first, "held") as one:
            [started] = await send(one, says("wait"), now=True)
        await entered(gate)  # it works on the first, held in its tool
        events = []
        async with a2a(second, "held", streaming=True) as two:
            async for event in two.subscribe(SubscribeToTaskRequest(id=started.task.id)):
                events.append(event)
                if len(events) == 1:
                    gate.release.set()  # it ends once the second follows it
        async with a2a(first, "held") as one:
            ended = await one.get_task(GetTaskRequest(id=started.task.id))
        return events, ended

    with two_servers(redis_url) as (first, second, gate):
        events, ended = asyncio.run(scenario(first, second, gate))
    assert events[0].task.status.state == TaskState.TASK_STATE_WORKING
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    said = [
        e.artifact_update.artifact.parts[0].text for e in events if e.HasField("artifact_update")
    ]
    assert "".join(said) == "done: held wait" == text_of(ended)
    assert ended.status.state == TaskState.TASK_STATE_COMPLETED


def test_a_task_working_on_one_server_is_cancelled_on_the_other(redis_url: str) -> None:
    async def scenario(first: str, second: str, gate: Gate) -> tuple[Task, Task, str]:
        async with a2a(first, "held") as one:
            [started] = await send(one, says("wait"), now=True)
        await entered(gate)
        async with a2a(second, "held") as two:
            cancelled = await two.cancel_task(CancelTaskRequest(id=started.task.id))
        async with a2a(first, "held") as one:
            read = await one.get_task(GetTaskRequest(id=started.task.id))
        async with get_client(url=first) as client:
            run = await client.runs.get(started.task.context_id, started.task.id)
        return cancelled, read, run["status"]

    with two_servers(redis_url) as (first, second, gate):
        cancelled, read, status = asyncio.run(scenario(first, second, gate))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert read.status.state == TaskState.TASK_STATE_CANCELED
    assert status == "interrupted"
