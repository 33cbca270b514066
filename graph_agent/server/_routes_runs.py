"""The routes of runs: create (in the background, waited for, streamed), list, read, join,
rejoin a stream, cancel."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ._http import HTTPProblem, route
from ._server import read_body, server_of

__all__ = ["RUN_ROUTES"]


# -- runs --------------------------------------------------------------------------------


@route("/threads/{thread_id}/runs", ["POST"])
async def runs_create(request: Request) -> Response:
    server = server_of(request)
    run = await server.start_run(request.path_params["thread_id"], await read_body(request))
    where = f"/threads/{run.thread_id}/runs/{run.run_id}"
    return JSONResponse(server.run_wire(run), headers={"Content-Location": where})


@route("/threads/{thread_id}/runs", ["GET"])
async def runs_list(request: Request) -> Response:
    server = server_of(request)
    await server.find_thread(request.path_params["thread_id"])
    runs = server.runs.thread_runs(request.path_params["thread_id"])
    return JSONResponse([server.run_wire(r) for r in runs])


@route("/threads/{thread_id}/runs/wait", ["POST"])
async def runs_wait(request: Request) -> Response:
    server = server_of(request)
    run = await server.start_run(request.path_params["thread_id"], await read_body(request))
    await server.runs.join(run)
    where = f"/threads/{run.thread_id}/runs/{run.run_id}/join"
    return JSONResponse(await server.final_values(run), headers={"Location": where})


@route("/threads/{thread_id}/runs/stream", ["POST"])
async def runs_stream(request: Request) -> Response:
    server = server_of(request)
    run = await server.start_run(request.path_params["thread_id"], await read_body(request))
    return server.stream(run, None)


@route("/threads/{thread_id}/runs/{run_id}", ["GET"])
async def run_get(request: Request) -> Response:
    server = server_of(request)
    run = server.run_of(request.path_params["thread_id"], request.path_params["run_id"])
    return JSONResponse(server.run_wire(run))


@route("/threads/{thread_id}/runs/{run_id}/join", ["GET"])
async def run_join(request: Request) -> Response:
    server = server_of(request)
    run = server.run_of(request.path_params["thread_id"], request.path_params["run_id"])
    await server.runs.join(run)
    return JSONResponse(await server.final_values(run))


@route("/threads/{thread_id}/runs/{run_id}/stream", ["GET"])
async def run_rejoin(request: Request) -> Response:
    server = server_of(request)
    run = server.run_of(request.path_params["thread_id"], request.path_params["run_id"])
    return server.stream(run, request.headers.get("last-event-id"))


@route("/threads/{thread_id}/runs/{run_id}/cancel", ["POST"])
async def run_cancel(request: Request) -> Response:
    server = server_of(request)
    run = server.run_of(request.path_params["thread_id"], request.path_params["run_id"])
    wait = request.query_params.get("wait") in ("1", "true", "True")
    action = request.query_params.get("action") or "interrupt"
    if action not in ("interrupt", "rollback"):
        raise HTTPProblem(422, f"action {action!r} is not 'interrupt' or 'rollback'")
    await server.runs.cancel(run, rollback=action == "rollback", wait=wait)
    return Response(status_code=200 if wait else 202)


@route("/ok", ["GET"])
async def ok(request: Request) -> Response:
    return JSONResponse({"ok": True})


RUN_ROUTES = [
    runs_wait,
    runs_stream,
    runs_create,
    runs_list,
    run_join,
    run_rejoin,
    run_cancel,
    run_get,
    ok,
]
