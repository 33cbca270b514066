"""Every served agent as a tool of an MCP server at ``/mcp`` (streamable HTTP), built on the
official ``mcp`` SDK's server side (2.x; with 1.x or without the SDK, ``/mcp`` answers 501
saying what to install).

A call is a run of the server's runs service, like one a client starts with ``runs.wait``:
the same thread records, the same run records, so an MCP call is visible (and can be
watched, cancelled, answered) over the Agent Protocol routes. The tool's input is the
``message`` and an optional ``thread_id`` (a new thread when it is left out); its result is
the agent's final answer as text (and its structured output as structured content), with the
thread and the run in ``_meta``.

Sessions are stateful (the SDK's ``Mcp-Session-Id``): an interrupt is asked of a client of
the ``initialize`` handshake as an elicitation on the call's own SSE stream, and the client's
answer comes back on a later request of the same session, which a stateless server could not
route; progress notifications ride the same stream. A call nothing may precede (no progress
asked, a client that cannot be asked) is answered in JSON (``_mcp_sessions``). A client of
2026-07-28 (no session) gets the question as the call's ``input_required`` result and
answers it by calling again, with the ``request_state`` that names the thread. (LangGraph's
``/mcp`` is stateless and JSON-only: no progress, no questions.) Several pending interrupts
are each asked (in turn, or one input request each), and the thread is resumed once with
every answer keyed by interrupt id. A client that cannot be asked gets an error result
naming the thread that waits and how to answer it. A client of 2026-07-28 that declares
MCP's Tasks gets a long call (or one that waits for a person) as a task (``_mcp_tasks``).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ..events import CustomEvent, NodeStart, ToolEnd, ToolStart
from ..runs import EVENT, Run
from ._http import HTTPProblem
from ._mcp_results import (
    ANSWER_SCHEMA,
    METADATA,
    answer_of,
    error,
    form,
    how,
    question,
    result,
    resume_body,
    unanswered,
)
from ._server import Served, Server

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp_types import (
        CallToolRequestParams,
        CallToolResult,
        InputRequiredResult,
        ListToolsResult,
    )

__all__ = ["McpEndpoint", "mcp_endpoint"]

PATH = "/mcp"

_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What to ask the agent."},
        "thread_id": {
            "type": "string",
            "description": "The conversation to go on with (the thread_id in the _meta of an "
            "earlier result); leave it out to start a new one.",
        },
    },
    "required": ["message"],
    "additionalProperties": False,
}


def _sdk_missing() -> str | None:
    """Why ``/mcp`` cannot be served here (``None``: it can)."""
    try:
        major = int(importlib.metadata.version("mcp").split(".")[0])
    except importlib.metadata.PackageNotFoundError:
        return "serving agents over MCP needs the mcp extra: pip install 'graph-agent[mcp]'"
    if major < 2:
        return (
            "serving agents over MCP needs the mcp SDK 2.x (1.x is installed; graph_agent.mcp's "
            "client side works with it): pip install 'mcp>=2'"
        )
    return None


class _Unavailable:
    """``/mcp`` without the SDK it needs: a 501 saying what to install."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await JSONResponse({"detail": self.reason}, 501)(scope, receive, send)


class McpEndpoint:
    """``/mcp`` for the app of ``server``: its ``routes``, and ``running()``, which the app's
    lifespan enters (the SDK's session manager lives in it)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        missing = _sdk_missing()
        self._manager: Any = None
        app: ASGIApp = _Unavailable(missing) if missing else self._build()
        self.routes: list[BaseRoute] = [Route(PATH, app)]

    def _build(self) -> ASGIApp:
        from mcp.server.extension import compose_tool_call_handler
        from mcp.server.lowlevel import Server as McpServer
        from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
        from mcp_types import CallToolRequestParams, SubscriptionsListenRequestParams

        from ._mcp_listen import TaskListener
        from ._mcp_sessions import McpSessions
        from ._mcp_tasks import McpTasks

        mcp_server: McpServer[Any] = McpServer(
            "graph-agent",
            version=importlib.metadata.version("graph-agent"),
            instructions="Each tool is an agent: send it a message, go on with its thread_id.",
            on_list_tools=self._list_tools,
            get_tool_input_schema=self._input_schema,
        )
        # the Tasks extension, applied as MCPServer(extensions=[...]) applies one
        tasks = McpTasks(self)
        for method in tasks.methods():
            mcp_server.add_request_handler(method.method, method.params_type, method.handler)
        mcp_server.extensions[tasks.identifier] = tasks.settings()
        calls = compose_tool_call_handler([tasks], self._call_tool)
        mcp_server.add_request_handler("tools/call", CallToolRequestParams, calls)
        # notifications/tasks, on a subscriptions/listen stream (a spec method: no binding)
        listen = TaskListener(tasks)
        mcp_server.add_request_handler(
            "subscriptions/listen", SubscriptionsListenRequestParams, listen
        )
        # origins and hosts are checked by the app's own middleware (_guard), the token too
        self._manager = McpSessions(mcp_server, max_request_body_size=self.server.max_body)
        return StreamableHTTPASGIApp(self._manager)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The SDK's session manager, for the app's life."""
        if self._manager is None:
            yield
            return
        async with self._manager.run():
            yield

    # -- the MCP methods ---------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: Any
    ) -> ListToolsResult:
        from mcp_types import ListToolsResult, Tool

        tools = [
            Tool(
                name=served.graph_id,
                description=served.description or f"The agent {served.graph_id}.",
                input_schema=_INPUT_SCHEMA,
            )
            for served in self.server.served.values()
        ]
        return ListToolsResult(tools=tools)

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema of the tool ``name`` (``None``: there is none), which the SDK
        checks a 2026-07-28 call's ``Mcp-Param`` headers against (without it, it lists the
        tools on every call to find the schema)."""
        return _INPUT_SCHEMA if name in self.server.served else None

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        """A call answered when its run ends: the person asked (elicitation, or the call's
        ``input_required`` result) at each interrupt on the way."""
        planned = self.plan(params)
        if not isinstance(planned, tuple):
            return planned
        served, body = planned
        if params.request_state is not None:  # a 2026-07-28 client's answers to our questions
            try:
                thread_id, asked = _state_of(params.request_state)
            except ValueError as problem:
                return error(f"{params.name}: {problem}")
            answers = _replies(params.input_responses or {}, asked)
            if answers is None:
                return error(unanswered(served, thread_id), {"thread_id": thread_id})
            body = {**resume_body(served, answers), "thread_id": thread_id}
        while True:
            run = await self.start(params.name, body)
            if not isinstance(run, Run):
                return run
            values = await self.server.cancel_unless_answered(run, self.finish(ctx, run))
            meta = {"thread_id": run.thread_id, "run_id": run.run_id}
            waiting = values.get("__interrupt__")
            if "__error__" in values or not waiting:
                return result(values, meta)
            replied = await _ask(ctx, served, waiting, meta)
            if not isinstance(replied, dict):
                return replied
            body = {**resume_body(served, replied), "thread_id": run.thread_id}

    def plan(self, params: CallToolRequestParams) -> tuple[Served, dict[str, Any]] | CallToolResult:
        """The served agent a call names and the body of the run it asks for (its
        ``thread_id`` in it: a new one when the call gives none); the error result when the
        call does not fit."""
        served = self.server.served.get(params.name)
        if served is None:
            tools = ", ".join(sorted(self.server.served))
            return error(f"there is no tool {params.name!r}; the tools are: {tools}")
        try:
            message, thread_id = _arguments(params.arguments)
        except ValueError as problem:
            return error(f"{params.name}: {problem}")
        body: dict[str, Any] = {
            "assistant_id": served.graph_id,
            "metadata": dict(METADATA),
            "input": {"messages": [{"role": "user", "content": message}]},
            "if_not_exists": "create",
            "thread_id": thread_id or str(uuid.uuid4()),
        }
        return served, body

    async def start(self, tool: str, body: dict[str, Any]) -> Run | CallToolResult:
        """The run ``body`` asks for (on its ``thread_id``), started; the error result when
        the server refuses it."""
        body = dict(body)
        thread_id = body.pop("thread_id")
        try:
            return await self.server.start_run(thread_id, body, waited=True)
        except HTTPProblem as problem:
            return error(f"{tool}: {problem.detail}")

    async def finish(self, ctx: ServerRequestContext[Any, Any], run: Run) -> dict[str, Any]:
        """The run's final values, once it ends; a progress notification per step, tool
        call and custom event meanwhile, when the client asked for progress."""
        if ctx.meta and ctx.meta.get("progress_token") is not None:
            done = 0
            async for batch in run.log.batches():
                for entry in batch:
                    note = _progress_note(entry.data) if entry.kind == EVENT else None
                    if note is not None:
                        done += 1
                        await ctx.session.report_progress(done, None, note)
        await self.server.runs.join(run)
        return await self.server.final_values(run)


def _arguments(arguments: Mapping[str, Any] | None) -> tuple[str, str | None]:
    """``message`` and ``thread_id`` of a call, checked (``ValueError`` saying what is
    wrong)."""
    given = dict(arguments or {})
    unknown = sorted(set(given) - {"message", "thread_id"})
    if unknown:
        raise ValueError(f"unknown arguments {unknown}: give message and, optionally, thread_id")
    message, thread_id = given.get("message"), given.get("thread_id")
    if not isinstance(message, str) or not message.strip():
        raise ValueError(f"message must be a non-empty string, got {message!r}")
    if thread_id is not None and (not isinstance(thread_id, str) or not thread_id):
        raise ValueError(f"thread_id must be a non-empty string, got {thread_id!r}")
    return message, thread_id


def _progress_note(event: Any) -> str | None:
    """What a progress notification says of a run event (``None``: nothing)."""
    if isinstance(event, NodeStart):
        return f"step {event.node}"
    if isinstance(event, ToolStart):
        return f"calling {event.name}"
    if isinstance(event, ToolEnd):
        return f"{event.name} answered"
    if isinstance(event, CustomEvent):
        return json.dumps(event.data, default=str)[:200]
    return None


async def _ask(
    ctx: ServerRequestContext[Any, Any],
    served: Served,
    waiting: Sequence[Mapping[str, Any]],
    meta: dict[str, Any],
) -> dict[str, Any] | CallToolResult | InputRequiredResult:
    """The person's answers to the pending interrupts ``waiting``, asked of the client,
    keyed by interrupt id (what the thread is resumed with): an elicitation each, in turn,
    on the call's own stream (a client of the ``initialize`` handshake), or, for a client of
    2026-07-28, the questions as the call's result (``input_required``, one input request
    per interrupt) that the client answers by calling again. When they cannot be asked, or
    one is not answered, the error result (with ``meta``: the run and its thread)."""
    from mcp_types import (
        ClientCapabilities,
        ElicitationCapability,
        ElicitRequest,
        InputRequiredResult,
    )
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    thread = meta["thread_id"]
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
    asking = ClientCapabilities(elicitation=ElicitationCapability())
    if not ctx.session.check_client_capability(asking) or not (
        modern or ctx.session.can_send_request
    ):
        questions = "; ".join(question(i) for i in waiting)
        waits = f"the agent is waiting for a person: {questions}; {how(served, thread)}"
        return error(waits, meta)
    if modern:
        state = json.dumps({"thread_id": thread, "asked": [i["id"] for i in waiting]})
        requests: dict[str, Any] = {i["id"]: ElicitRequest(params=form(served, i)) for i in waiting}
        return InputRequiredResult(input_requests=requests, request_state=state)
    answers: dict[str, Any] = {}
    for interrupt in waiting:  # in turn: a form each
        asked = form(served, interrupt)
        reply = await ctx.session.elicit_form(
            asked.message, ANSWER_SCHEMA, related_request_id=ctx.request_id
        )
        answer = answer_of(reply)
        if answer is None:
            return error(unanswered(served, thread), meta)
        answers[interrupt["id"]] = answer[0]
    return answers


def _state_of(request_state: str) -> tuple[str, list[str]]:
    """The thread the questions were asked on and their keys (the interrupts' ids), from
    the ``request_state`` the client echoes."""
    try:
        state = json.loads(request_state)
        thread, asked = state["thread_id"], state["asked"]
    except (ValueError, TypeError, KeyError):
        thread, asked = None, None
    if not isinstance(thread, str) or not isinstance(asked, list) or not asked:
        raise ValueError(
            f"request_state {request_state[:80]!r} is not one this server sent: send back "
            "the request_state of the input_required result unchanged"
        )
    return thread, [str(key) for key in asked]


def _replies(replies: Mapping[str, Any], asked: Sequence[str]) -> dict[str, Any] | None:
    """The answers to the questions ``asked``, keyed by interrupt id; ``None`` when one of
    them is not answered."""
    answers: dict[str, Any] = {}
    for key in asked:
        answer = answer_of(replies.get(key))
        if answer is None:
            return None
        answers[key] = answer[0]
    return answers


def mcp_endpoint(server: Server) -> McpEndpoint:
    """``/mcp`` serving ``server``'s agents (a 501 there without the SDK 2.x)."""
    return McpEndpoint(server)
