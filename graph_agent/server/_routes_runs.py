"""The routes of runs: create (in the background, waited for, streamed; on a thread, or
stateless on a thread of their own), list, read, join, rejoin a stream, cancel, delete."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..runs import Run
from ._http import HTTPProblem, json_when_ready, route
from ._request import MAX_LIMIT, query_int
from ._server import Server, read_body, server_of, wire_status
from ._wire_stream import parse_stream_modes

__all__ = ["RUN_ROUTES"]


RUN_STATUSES = ("pending", "running", "success", "error", "timeout", "interrupted")


def _thread_id(request: Request) -> str | None:
    """The path's thread, or ``None`` on the stateless routes (``/runs/...``)."""
    thread_id = request.path_params.get("thread_id")
    return str(thread_id) if thread_id is not None else None


async def _run(server: Server, request: Request) -> Run:
    return await server.run_of(_thread_id(request), request.path_params["run_id"])


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name) in ("1", "true", "True")


async def _finished(server: Server, run: Run) -> Any:
    await server.runs.join(run)
    return await server.final_values(run)


async def runs_create(request: Request) -> Response:
    server = server_of(request)
    run = await server.start_run(_thread_id(request), await read_body(request))
    headers = server.run_headers(run, "")
    return JSONResponse(
        server.run_wire(run), headers={"Content-Location": headers["Content-Location"]}
    )


async def runs_wait(request: Request) -> Response:
    server = server_of(request)
    body = await read_body(request)
    run = await server.start_run(_thread_id(request), body, waited=True)
    if body.get("on_disconnect") == "cancel":
        # a client that stops waiting stops the run: the answer is then never read
        return json_when_ready(
            server.cancel_unless_answered(run, _finished(server, run)),
            server.run_headers(run, "/join"),
            heartbeat=server.heartbeat,
        )
    return json_when_ready(
        _finished(server, run), server.run_headers(run, "/join"), heartbeat=server.heartbeat
    )


async def runs_stream(request: Request) -> Response:
    server = server_of(request)
    body = await read_body(request)
    run = await server.start_run(_thread_id(request), body)
    return server.stream(run, None, cancel_on_disconnect=body.get("on_disconnect") == "cancel")


@route("/threads/{thread_id}/runs", ["GET"])
async def runs_list(request: Request) -> Response:
    server = server_of(request)
    await server.find_thread(request.path_params["thread_id"])
    limit = query_int(request, "limit", 10, 1, MAX_LIMIT)
    offset = query_int(request, "offset", 0)
    status = request.query_params.get("status")
    if status is not None and status not in RUN_STATUSES:
        raise HTTPProblem(422, f"status {status!r} is not one of {list(RUN_STATUSES)}")
    runs = [
        r
        for r in await server.runs.thread_runs(request.path_params["thread_id"])
        if status in (None, wire_status(r.status))
    ]
    return JSONResponse([server.run_wire(r) for r in runs[offset : offset + limit]])


async def run_get(request: Request) -> Response:
    server = server_of(request)
    return JSONResponse(server.run_wire(await _run(server, request)))


@route("/threads/{thread_id}/runs/{run_id}", ["DELETE"])
async def run_delete(request: Request) -> Response:
    server = server_of(request)
    run = await _run(server, request)
    if run.status in ("pending", "running"):
        raise HTTPProblem(409, f"run {run.run_id!r} is {run.status}: cancel it first")
    await server.runs.delete(run)
    return Response(status_code=204)


@route("/threads/{thread_id}/runs/{run_id}/join", ["GET"])
async def run_join(request: Request) -> Response:
    server = server_of(request)
    run = await _run(server, request)
    answer = _finished(server, run)
    if _flag(request, "cancel_on_disconnect"):
        answer = server.cancel_unless_answered(run, answer)
    return json_when_ready(answer, server.run_headers(run, "/join"), heartbeat=server.heartbeat)


async def run_rejoin(request: Request) -> Response:
    """Join a run's stream, in the modes it was asked for or in those of ``stream_mode``, with
    its subgraphs' parts as it was asked for or as ``stream_subgraphs`` says (a run's log
    keeps every event, so any client can read any run's whole timeline)."""
    server = server_of(request)
    run = await _run(server, request)
    # (the Python client sends ``stream_mode=`` when it names none)
    asked = [mode for mode in request.query_params.getlist("stream_mode") if mode]
    try:
        modes = parse_stream_modes(asked[0] if len(asked) == 1 else asked) if asked else None
    except ValueError as error:
        raise HTTPProblem(422, str(error)) from None
    return server.stream(
        run,
        request.headers.get("last-event-id"),
        cancel_on_disconnect=_flag(request, "cancel_on_disconnect"),
        modes=modes,
        subgraphs=_flag(request, "stream_subgraphs")
        if request.query_params.get("stream_subgraphs")
        else None,
    )


@route("/threads/{thread_id}/runs/{run_id}/cancel", ["POST"])
async def run_cancel(request: Request) -> Response:
    server = server_of(request)
    run = await _run(server, request)
    wait = _flag(request, "wait")
    action = request.query_params.get("action") or "interrupt"
    if action not in ("interrupt", "rollback"):
        raise HTTPProblem(422, f"action {action!r} is not 'interrupt' or 'rollback'")
    await server.runs.cancel(run, rollback=action == "rollback", wait=wait)
    if wait:
        return JSONResponse(
            await server.final_values(run), headers=server.run_headers(run, "/join")
        )
    return Response(status_code=202)


@route("/ok", ["GET"])
async def ok(request: Request) -> Response:
    return JSONResponse({"ok": True})


@route("/info", ["GET"])
async def info(request: Request) -> Response:
    return JSONResponse({"version": version("graph-agent"), "flags": {}})


def _both(path: str, methods: list[str], handler: Any) -> list[Any]:
    """``handler`` on a thread's path and on the stateless one (``/runs/...``)."""
    return [route("/threads/{thread_id}" + path, methods)(handler), route(path, methods)(handler)]


RUN_ROUTES = [
    *_both("/runs/wait", ["POST"], runs_wait),
    *_both("/runs/stream", ["POST"], runs_stream),
    *_both("/runs", ["POST"], runs_create),
    runs_list,
    run_join,
    *_both("/runs/{run_id}/stream", ["GET"], run_rejoin),
    run_cancel,
    run_delete,
    *_both("/runs/{run_id}", ["GET"], run_get),
    ok,
    info,
]
