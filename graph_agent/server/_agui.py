"""AG-UI 1.0 over our runs: ``POST /ag-ui/{assistant_id}`` takes a ``RunAgentInput`` and
answers the run as a stream of AG-UI events (server-sent events, ``data: <event JSON>``).

An adapter, no more: the AG-UI thread is our thread and the run is our run (started by
``Server.start_run``, read from its log), so a run started here is listed, joined, streamed
and cancelled over the Agent Protocol's routes too. docs/ag-ui.md says what is served.
``ag-ui-protocol`` (the ``agui`` extra) is imported when the route is first asked for:
without it the route answers 501 saying how to install it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ..graph import RunnableConfig, StateSnapshot
from ..runs import Run
from ._http import HTTPProblem, route
from ._server import Server, read_body, server_of

__all__ = ["AGUI_ROUTES"]

_HEARTBEAT = b": heartbeat\n\n"
_cancels: set[asyncio.Task[None]] = set()  # held until done (a task nobody holds may be lost)


async def _snapshot(server: Server, run: Run) -> StateSnapshot | None:
    served = server.by_assistant.get(run.assistant_id) or server.served.get(run.assistant_id)
    if served is None:
        return None
    return await served.graph.aget_state(RunnableConfig(thread_id=run.thread_id))


def _events(server: Server, run: Run) -> AsyncIterator[bytes]:
    from ._agui_events import AguiEncoder

    declared = run.kwargs.get("context") or {}
    client_tools = {t["name"] for t in declared.get("ag_ui_tools") or ()}
    encoder = AguiEncoder(run.thread_id, run.run_id, client_tools)

    def sse(events: list[Any]) -> bytes:
        return b"".join(
            b"data: " + e.model_dump_json(by_alias=True).encode() + b"\n\n" for e in events
        )

    async def body() -> AsyncIterator[bytes]:
        finished = False
        try:
            yield sse(encoder.start())
            async for batch in run.log.batches(0, idle=server.heartbeat):
                if not batch:
                    yield _HEARTBEAT
                    continue
                chunk = sse([e for entry in batch for e in encoder.entry(entry)])
                if chunk:
                    yield chunk
            await server.runs.join(run)
            ended = await server.runs.get(run.run_id) or run
            snapshot = await _snapshot(server, ended)
            yield sse(encoder.finish(ended.status, snapshot, ended.error))
            finished = True
        finally:
            if not finished:  # the client went away (its Stop): the run stops too
                task = asyncio.create_task(server.runs.cancel(run, wait=False))
                _cancels.add(task)
                task.add_done_callback(_cancels.discard)

    return body()


@route("/ag-ui/{assistant_id}", ["POST"])
async def agui_run(request: Request) -> Response:
    """Start a run from an AG-UI ``RunAgentInput`` and stream it as AG-UI events."""
    try:
        from ._agui_input import parse_input, run_body
    except ImportError:  # pragma: no cover - the agui extra is part of make test
        raise HTTPProblem(
            501, "AG-UI needs ag-ui-protocol: pip install 'graph-agent[agui]'"
        ) from None
    server = server_of(request)
    served = server.assistant(request.path_params["assistant_id"])
    run_input = parse_input(await read_body(request))
    if not run_input.thread_id:
        raise HTTPProblem(422, "threadId must not be empty: name the conversation's thread")
    snapshot = await served.graph.aget_state(RunnableConfig(thread_id=run_input.thread_id))
    own = [t.tool_definition.name for t in getattr(served.target, "tools", ())]
    body = run_body(run_input, served.graph_id, snapshot, own)
    run = await server.start_run(run_input.thread_id, body)
    headers = server.run_headers(run, "/stream")
    return StreamingResponse(
        _events(server, run),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no", **headers},
    )


AGUI_ROUTES = [agui_run]
