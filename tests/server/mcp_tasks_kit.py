"""A client side of MCP's Tasks (``io.modelcontextprotocol/tasks``) on the official ``mcp``
client: the SDK 2.3 has no Tasks API, but its ``ClientExtension`` declares the extension in
each request's capabilities and claims the ``resultType: "task"`` result of ``tools/call``,
and its session sends ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` as requests of
their own types (with the ``Mcp-Name`` header the spec asks for)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, ClassVar, Literal

import anyio
from mcp import Client, MCPError
from mcp.client.extension import ClaimContext, ClientExtension, NotificationBinding, ResultClaim
from mcp_types import (
    CallToolResult,
    NotificationParams,
    Request,
    RequestParams,
    Result,
    SubscriptionFilter,
    SubscriptionsListenRequest,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    TextContent,
)
from pydantic import ConfigDict, Field, TypeAdapter

TASKS = "io.modelcontextprotocol/tasks"
MODERN = "2026-07-28"
TERMINAL = ("completed", "failed", "cancelled")
_RAW: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


class CreateTaskResult(Result):
    """A ``tools/call`` answered with a task handle."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str


class TaskState(NotificationParams):
    """A ``notifications/tasks``: the whole task."""

    model_config = ConfigDict(extra="allow")


class TaskParams(RequestParams):
    task_id: str = Field(alias="taskId")


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param: ClassVar[str | None] = "taskId"


class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    name_param: ClassVar[str | None] = "taskId"


class UpdateTask(Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param: ClassVar[str | None] = "taskId"


async def get(session: Any, task_id: str) -> dict[str, Any]:
    params = TaskParams(taskId=task_id)
    return await session.send_request(GetTask(params=params), _RAW)  # type: ignore[no-any-return]


async def cancel(session: Any, task_id: str) -> dict[str, Any]:
    params = TaskParams(taskId=task_id)
    return await session.send_request(CancelTask(params=params), _RAW)  # type: ignore[no-any-return]


async def update(session: Any, task_id: str, responses: dict[str, Any]) -> dict[str, Any]:
    params = UpdateParams(taskId=task_id, inputResponses=responses)
    return await session.send_request(UpdateTask(params=params), _RAW)  # type: ignore[no-any-return]


async def listen(session: Any, *task_ids: str) -> SubscriptionsListenResult:
    """A ``subscriptions/listen`` for the tasks' notifications, until the server ends it."""
    wanted = SubscriptionFilter.model_validate({"taskIds": list(task_ids)})
    request = SubscriptionsListenRequest(
        params=SubscriptionsListenRequestParams(notifications=wanted)
    )
    return await session.send_request(request, SubscriptionsListenResult)  # type: ignore[no-any-return]


async def until(session: Any, task_id: str, *statuses: str) -> dict[str, Any]:
    """``tasks/get`` polled until the task is in one of ``statuses`` (or ended)."""
    with anyio.fail_after(20):
        while True:
            task = await get(session, task_id)
            if task["status"] in statuses or task["status"] in TERMINAL:
                return task
            await anyio.sleep(0.02)  # the spec's way: polling (faster than pollIntervalMs)


Answer = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class Tasks(ClientExtension):
    """Declares Tasks; a task a call is answered with is polled to its end, each question
    it asks answered by ``answer(request)`` (the ``inputResponses`` entry), then the call
    returns the task's result. ``seen`` keeps every task state read; ``handed`` is set
    once a call was answered with a task."""

    identifier = TASKS

    def __init__(self, answer: Answer | None = None) -> None:
        self.answer = answer
        self.seen: list[dict[str, Any]] = []
        self.pushed: list[dict[str, Any]] = []  # the notifications/tasks received
        self.arrived = asyncio.Event()
        self.handed = asyncio.Event()

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (ResultClaim(result_type="task", model=CreateTaskResult, resolve=self._resolve),)

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        return (
            NotificationBinding(
                method="notifications/tasks", params_type=TaskState, handler=self._pushed
            ),
        )

    async def _pushed(self, params: TaskState) -> None:
        self.pushed.append(params.model_dump(by_alias=True, mode="json", exclude_none=True))
        self.arrived.set()

    async def _resolve(self, handle: CreateTaskResult, ctx: ClaimContext) -> CallToolResult:
        self.handed.set()
        answered: set[str] = set()
        while True:
            task = await until(ctx.session, handle.task_id, "input_required")
            self.seen.append(task)
            if task["status"] == "completed":
                return CallToolResult.model_validate(task["result"])
            if task["status"] != "input_required":
                text = task.get("statusMessage", task["status"])
                return CallToolResult(content=[TextContent(text=text)], is_error=True)
            asked = {k: r for k, r in task["inputRequests"].items() if k not in answered}
            if self.answer is None or not asked:
                raise MCPError(code=-1, message=f"the task asks {task['inputRequests']}")
            responses = {k: await self.answer(r) for k, r in asked.items()}
            answered.update(responses)
            await update(ctx.session, handle.task_id, responses)


@asynccontextmanager
async def modern(url: str, token: str | None, **options: Any) -> AsyncIterator[Client]:
    """A ``mcp.Client`` pinned to 2026-07-28 (with the token, when given)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers) as http:
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with Client(transport, mode=MODERN, **options) as client:
            yield client
