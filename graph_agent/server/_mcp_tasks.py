"""MCP's Tasks (the extension ``io.modelcontextprotocol/tasks`` of the 2026-07-28 revision)
over our runs, built on the ``mcp`` SDK's ``Extension``: a call of a client that declares
the extension in its request's capabilities, and whose run does not end within
``TASK_AFTER`` seconds (or pauses for a person), is answered with a task handle
(``resultType: "task"``) instead of waiting; ``tasks/get`` reads the task, ``tasks/update``
answers its questions, ``tasks/cancel`` cancels it (``notifications/tasks``: ``_mcp_listen``).

A task IS a run: its id is the id of the run the call started, and it goes on in each next
run of the thread that answers an interrupt (``command.resume``: a ``tasks/update``, or an
answer sent over the Agent Protocol), up to the thread's next run with new input. The last
of them says the task's status: ``working`` while it is pending or running,
``input_required`` when it paused (each pending interrupt an elicitation keyed by the
interrupt's id), ``completed`` with the tool's result (an ``isError`` one when the run
failed: the spec keeps ``failed`` for JSON-RPC errors, and the call would have answered
that result), ``cancelled``. Nothing is kept beside the runs, so any server process on the
same run store (Redis) answers for any task."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, Protocol

from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp_types import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CallToolRequestParams,
    CallToolResult,
    ClientCapabilities,
    ElicitRequest,
    RequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from ..runs import Run
from ._mcp_results import answer_of, form, result, resume_body
from ._run_chains import chain_from
from ._server import Served, Server

__all__ = ["POLL_MS", "TASKS", "TASK_AFTER", "TERMINAL", "McpTasks", "declared"]

TASKS = "io.modelcontextprotocol/tasks"
TASK_AFTER = 1.0  # seconds a call of a client that takes tasks waits before it is a task
POLL_MS = 500  # the poll interval a task suggests
TERMINAL = ("completed", "failed", "cancelled")


class Calls(Protocol):
    """What the tasks need of ``/mcp``'s calls (``McpEndpoint``)."""

    server: Server

    def plan(
        self, params: CallToolRequestParams
    ) -> tuple[Served, dict[str, Any]] | CallToolResult: ...

    async def start(self, tool: str, body: dict[str, Any]) -> Run | CallToolResult: ...

    async def finish(self, ctx: ServerRequestContext[Any, Any], run: Run) -> dict[str, Any]: ...


class TaskParams(RequestParams):
    """``tasks/get`` and ``tasks/cancel``: the task."""

    task_id: str = Field(alias="taskId")


class UpdateTaskParams(TaskParams):
    """``tasks/update``: the task and the client's answers, keyed as its questions."""

    input_responses: dict[str, Any] = Field(alias="inputResponses")


class McpTasks(Extension):
    """The Tasks extension of ``endpoint``'s MCP server."""

    identifier = TASKS

    def __init__(self, endpoint: Calls) -> None:
        self.endpoint = endpoint
        self.server = endpoint.server

    def methods(self) -> Sequence[MethodBinding]:
        versions = frozenset(MODERN_PROTOCOL_VERSIONS)
        return (
            MethodBinding("tasks/get", TaskParams, self._get, versions),
            MethodBinding("tasks/update", UpdateTaskParams, self._update, versions),
            MethodBinding("tasks/cancel", TaskParams, self._cancel, versions),
        )

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        """A call of a client that takes tasks (not the retry of an ``input_required``
        result, which goes on as it began): the run started, waited for ``TASK_AFTER``
        seconds, then a task unless it ended."""
        if params.request_state is not None or not declared(ctx):
            return await call_next(ctx)
        planned = self.endpoint.plan(params)
        if not isinstance(planned, tuple):
            return planned
        run = await self.endpoint.start(params.name, planned[1])
        if not isinstance(run, Run):
            return run
        # its progress meanwhile, as a call that waits sends it (a task has none)
        finishing = asyncio.ensure_future(self.endpoint.finish(ctx, run))
        try:
            await self.server.cancel_unless_answered(
                run, asyncio.wait({finishing}, timeout=TASK_AFTER)
            )
        finally:
            finishing.cancel()
        status = "working"
        if finishing.done() and not finishing.cancelled():
            values = finishing.result()
            if not values.get("__interrupt__") or "__error__" in values:
                return result(values, _meta(run))
            status = "input_required"
        return {"resultType": "task", **_task(run, run, status)}

    # -- the methods -------------------------------------------------------------------------

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
        return (await self.detail(ctx, params.task_id))[0]

    async def detail(
        self, ctx: ServerRequestContext[Any, Any], task_id: str
    ) -> tuple[dict[str, Any], Run]:
        """The task as its latest run says it, with its questions or its result (what
        ``tasks/get`` answers), and that run."""
        served, first, head = await self.task_of(ctx, task_id)
        if head.active:
            return _task(first, head, "working"), head
        if head.status == "cancelled":
            return _task(first, head, "cancelled"), head
        values = await self.server.final_values(head)
        waiting = values.get("__interrupt__")
        if waiting and "__error__" not in values:
            asked = {i["id"]: ElicitRequest(params=form(served, i)) for i in waiting}
            requests = {k: r.model_dump(by_alias=True, mode="json") for k, r in asked.items()}
            return {**_task(first, head, "input_required"), "inputRequests": requests}, head
        done = result(values, _meta(head)).model_dump(by_alias=True, mode="json", exclude_none=True)
        return {**_task(first, head, "completed"), "result": done}, head

    async def _update(
        self, ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams
    ) -> HandlerResult:
        """The client's answers to the task's pending questions: the thread resumed with
        them (keyed by interrupt id), as the Agent Protocol resumes it; a question declined
        or dismissed cancels the task (the thread stays paused, answerable over the Agent
        Protocol). Answers to questions that are not pending are ignored."""
        served, _, head = await self.task_of(ctx, params.task_id)
        if head.active or head.status == "cancelled":
            return {}
        values = await self.server.final_values(head)
        pending = [i["id"] for i in values.get("__interrupt__") or ()]
        replies = {k: params.input_responses[k] for k in pending if k in params.input_responses}
        answers = {k: answer_of(reply) for k, reply in replies.items()}
        if any(answer is None for answer in answers.values()):
            await self._end(head, "the person did not answer the agent's question")
            return {}
        if answers:
            resume = {k: answer[0] for k, answer in answers.items() if answer is not None}
            body = {**resume_body(served, resume), "thread_id": head.thread_id}
            body["multitask_strategy"] = "reject"  # another answer's run came first: refused
            started = await self.endpoint.start(served.graph_id, body)
            if not isinstance(started, Run):  # the server refused the answer (its shape)
                said = getattr(started.content[0], "text", "the answer was refused")
                raise MCPError(code=INVALID_PARAMS, message=said)
        return {}

    async def _cancel(
        self, ctx: ServerRequestContext[Any, Any], params: TaskParams
    ) -> HandlerResult:
        """The task's run cancelled (its status says so over the Agent Protocol too); a task
        that waits for a person ends as cancelled, its thread still paused."""
        _, _, head = await self.task_of(ctx, params.task_id)
        if head.active:
            await self.server.runs.cancel(head, wait=False)
        elif head.status != "cancelled":
            values = await self.server.final_values(head)
            if values.get("__interrupt__"):
                await self._end(head, "cancelled while it waited for a person")
        return {}

    # -- reading a task ----------------------------------------------------------------------

    async def task_of(
        self, ctx: ServerRequestContext[Any, Any], task_id: str
    ) -> tuple[Served, Run, Run]:
        """The agent, the first run and the latest run of the task ``task_id``; a JSON-RPC
        error for a client that did not declare Tasks, or a task that is not one of ours."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            raise MCPError(
                code=METHOD_NOT_FOUND,
                message="tasks/* are served to clients of protocol 2026-07-28 that declare "
                f"the extension {TASKS!r}",
            )
        if not declared(ctx):
            raise MCPError(
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                message=f"declare the extension {TASKS!r} in the request's client "
                "capabilities to use tasks/*",
                data={"requiredCapabilities": {"extensions": {TASKS: {}}}},
            )
        first = await self.server.runs.get(task_id)
        served = None if first is None else self._served(first)
        if first is None or served is None or first.metadata.get("via") != "mcp":
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"task {task_id!r} not found: give the taskId of a task this server "
                "answered a tools/call with",
            )
        chain = chain_from(await self.server.runs.thread_runs(first.thread_id), first)
        return served, first, chain[-1]

    def _served(self, run: Run) -> Served | None:
        found = self.server.by_assistant.get(run.assistant_id)
        return found or self.server.served.get(run.assistant_id)

    async def _end(self, head: Run, why: str) -> None:
        """The task ends as cancelled (its last run's record says so), its thread left as
        it is: paused, answerable over the Agent Protocol."""
        head.mark("cancelled", why)
        await self.server.runs.store.put_run(head)


def declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the request's client takes tasks (it declared the extension; 2026-07-28)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    taken = ClientCapabilities(extensions={TASKS: {}})
    return ctx.session.check_client_capability(taken)


def _meta(run: Run) -> dict[str, Any]:
    return {"thread_id": run.thread_id, "run_id": run.run_id}


def _task(first: Run, head: Run, status: str) -> dict[str, Any]:
    """The task's fields (``Task``) in ``status``, as its first and its latest run say
    them."""
    task: dict[str, Any] = {
        "taskId": first.run_id,
        "status": status,
        "createdAt": _iso(first.created_at),
        "lastUpdatedAt": _iso(head.updated_at),
        "ttlMs": None,  # kept as long as the run store keeps the runs
        "pollIntervalMs": POLL_MS,
        "_meta": _meta(head),
    }
    if head.status == "cancelled":
        task["statusMessage"] = head.error or "the run was cancelled"
    return task


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat().replace("+00:00", "Z")
