"""``notifications/tasks`` of MCP's Tasks: a client of 2026-07-28 that declares the extension
asks for them with ``subscriptions/listen`` (``notifications.taskIds``), and the stream that
answers carries a ``notifications/tasks`` with the whole task (what ``tasks/get`` answers
then) each time one of those tasks changes: a run of it starts or ends, it asks, it is
answered. The stream ends (its result, the spec's graceful close) once every task followed
has ended. The SDK's own listen handler knows only its closed set of events (lists and
resources changed), and this server publishes none of those; a listen of a client that asks
for them is acknowledged without them (the spec's honored subset)."""

from __future__ import annotations

from typing import Any, Literal, cast

import anyio
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types import (
    INVALID_REQUEST,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    Notification,
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
)

from ._mcp_tasks import POLL_MS, TASKS, TERMINAL, McpTasks, declared

__all__ = ["TaskListener"]


class TaskNotification(Notification[dict[str, Any], Literal["notifications/tasks"]]):
    """A task's state, pushed."""

    method: Literal["notifications/tasks"] = "notifications/tasks"


class TaskListener:
    """Serves ``subscriptions/listen`` for the tasks of ``tasks``."""

    def __init__(self, tasks: McpTasks) -> None:
        self.tasks = tasks

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        if ctx.request_id is None:
            raise MCPError(INVALID_REQUEST, "subscriptions/listen needs a request id")
        asked = (params.notifications.model_extra or {}).get("taskIds") or []
        if asked and not declared(ctx):
            raise MCPError(
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                message=f"declare the extension {TASKS!r} in the request's client "
                "capabilities to listen to tasks",
                data={"requiredCapabilities": {"extensions": {TASKS: {}}}},
            )
        known = [t for t in dict.fromkeys(map(str, asked)) if await self._known(ctx, t)]
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        honored = SubscriptionFilter.model_validate({"taskIds": known} if known else {})
        ack = SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)
        await ctx.session.send_notification(
            SubscriptionsAcknowledgedNotification(params=ack), related_request_id=ctx.request_id
        )
        async with anyio.create_task_group() as following:
            for task_id in known:
                following.start_soon(self._follow, ctx, task_id, meta)
        return SubscriptionsListenResult(_meta=meta)

    async def _known(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> bool:
        try:
            await self.tasks.task_of(ctx, task_id)
        except MCPError:
            return False
        return True

    async def _follow(
        self, ctx: ServerRequestContext[Any, Any], task_id: str, meta: dict[str, Any]
    ) -> None:
        """A notification each time the task changes, until it ended."""
        last: tuple[Any, ...] | None = None
        while True:
            task, head = await self.tasks.detail(ctx, task_id)
            now = (task["status"], task["lastUpdatedAt"], head.run_id)
            if now != last:
                last = now
                stamped = {**task, "_meta": {**task.get("_meta", {}), **meta}}
                notification = TaskNotification(params=stamped)
                await ctx.session.send_notification(
                    cast("Any", notification), related_request_id=ctx.request_id
                )
            if task["status"] in TERMINAL:
                return
            if head.active and not head.done.is_set():  # it changes when the run ends
                await self.tasks.server.runs.join(head)
            else:  # it waits for an answer (a next run), here or on another server
                await self.tasks.server.runs.next_run(head.thread_id, POLL_MS / 1000)
