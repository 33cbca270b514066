"""The routes of assistants and threads: search, read, create, state, history."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..graph import RunnableConfig
from ._http import HTTPProblem, route
from ._server import ThreadRecord, now, read_body, server_of
from ._wire_state import (
    assistant_to_wire,
    checkpoint_to_wire,
    empty_state_to_wire,
    graph_to_wire,
    input_from_wire,
    run_config_from_wire,
    state_to_wire,
)

__all__ = ["THREAD_ROUTES"]


# -- assistants --------------------------------------------------------------------------


@route("/assistants/search", ["POST"])
async def assistants_search(request: Request) -> Response:
    server = server_of(request)
    query = await read_body(request)
    graph_id = query.get("graph_id")
    found = [
        assistant_to_wire(s.graph_id, created_at=s.created_at, description=s.description)
        for s in server.served.values()
        if graph_id in (None, s.graph_id)
    ]
    offset, limit = int(query.get("offset") or 0), int(query.get("limit") or 10)
    return JSONResponse(found[offset : offset + limit])


@route("/assistants/{assistant_id}", ["GET"])
async def assistant_get(request: Request) -> Response:
    server = server_of(request)
    s = server.assistant(request.path_params["assistant_id"])
    return JSONResponse(
        assistant_to_wire(s.graph_id, created_at=s.created_at, description=s.description)
    )


@route("/assistants/{assistant_id}/graph", ["GET"])
async def assistant_graph(request: Request) -> Response:
    server = server_of(request)
    s = server.assistant(request.path_params["assistant_id"])
    return JSONResponse(graph_to_wire(s.graph.get_graph()))


# -- threads -----------------------------------------------------------------------------


@route("/threads", ["POST"])
async def threads_create(request: Request) -> Response:
    server = server_of(request)
    given = await read_body(request)
    thread_id = given.get("thread_id") or str(uuid.uuid4())
    if not isinstance(thread_id, str):
        raise HTTPProblem(422, f"thread_id must be a string, got {thread_id!r}")
    record = server.threads.get(thread_id)
    if record is not None and given.get("if_exists") != "do_nothing":
        raise HTTPProblem(409, f"thread {thread_id!r} exists")
    if record is None:
        created = now()
        metadata = given.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise HTTPProblem(422, "metadata must be a JSON object")
        record = server.threads[thread_id] = ThreadRecord(
            thread_id, created, created, dict(metadata)
        )
    return JSONResponse(await server.thread_wire(record))


@route("/threads/search", ["POST"])
async def threads_search(request: Request) -> Response:
    server = server_of(request)
    query = await read_body(request)
    metadata, ids, status = query.get("metadata") or {}, query.get("ids"), query.get("status")
    try:
        limit, offset = int(query.get("limit") or 10), int(query.get("offset") or 0)
    except (TypeError, ValueError):
        raise HTTPProblem(422, "limit and offset must be integers") from None
    if not isinstance(metadata, dict) or (ids is not None and not isinstance(ids, list)):
        raise HTTPProblem(422, "metadata must be a JSON object and ids a list")
    sort_by = query.get("sort_by") or "updated_at"
    if sort_by not in ("thread_id", "status", "created_at", "updated_at", "state_updated_at"):
        raise HTTPProblem(422, f"sort_by {sort_by!r} is not a field threads sort by")
    chosen = [
        r
        for r in server.threads.values()
        if all(r.metadata.get(k) == v for k, v in metadata.items())
        and (ids is None or r.thread_id in ids)
    ]
    found = [await server.thread_wire(r) for r in chosen]
    if status is not None:
        found = [t for t in found if t["status"] == status]
    found.sort(key=lambda t: str(t[sort_by]), reverse=query.get("sort_order") != "asc")
    return JSONResponse(
        found[offset : offset + limit], headers={"X-Pagination-Total": str(len(found))}
    )


@route("/threads/{thread_id}", ["GET"])
async def thread_get(request: Request) -> Response:
    server = server_of(request)
    record = await server.find_thread(request.path_params["thread_id"])
    return JSONResponse(await server.thread_wire(record))


@route("/threads/{thread_id}/state", ["GET"])
async def thread_state(request: Request) -> Response:
    server = server_of(request)
    record = await server.find_thread(request.path_params["thread_id"])
    snapshot = await server.snapshot(record)
    if snapshot is None:
        return JSONResponse(empty_state_to_wire())
    return JSONResponse(state_to_wire(snapshot, thread_id=record.thread_id))


@route("/threads/{thread_id}/state", ["POST"])
async def thread_update(request: Request) -> Response:
    server = server_of(request)
    record = await server.find_thread(request.path_params["thread_id"])
    given = await read_body(request)
    served_ = server.graph_of(record)
    if served_ is None:
        raise HTTPProblem(422, f"thread {record.thread_id!r} has no graph yet: run it first")
    if server.runs.busy(record.thread_id):
        raise HTTPProblem(409, f"thread {record.thread_id!r} is busy with a run")
    try:
        config = run_config_from_wire(record.thread_id, given)
        values = input_from_wire(given.get("values"))
        written = await served_.graph.aupdate_state(config, values, given.get("as_node"))
    except (ValueError, TypeError) as error:  # GraphUsageError is a TypeError
        raise HTTPProblem(422, str(error)) from None
    record.updated_at = now()
    return JSONResponse({"checkpoint": checkpoint_to_wire(record.thread_id, written.checkpoint_id)})


@route("/threads/{thread_id}/history", ["POST"])
async def thread_history(request: Request) -> Response:
    server = server_of(request)
    record = await server.find_thread(request.path_params["thread_id"])
    query = await read_body(request)
    served_ = server.graph_of(record)
    if served_ is None:
        return JSONResponse([])
    limit = int(query.get("limit") or 10)
    config = RunnableConfig(thread_id=record.thread_id)
    states = []
    async for snapshot in served_.graph.aget_state_history(config, limit=limit):
        states.append(state_to_wire(snapshot, thread_id=record.thread_id))
    return JSONResponse(states)


THREAD_ROUTES = [
    assistants_search,
    assistant_graph,
    assistant_get,
    threads_create,
    threads_search,
    thread_state,
    thread_update,
    thread_history,
    thread_get,
]
