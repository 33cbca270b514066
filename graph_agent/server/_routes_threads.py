"""The routes of assistants and threads: search, read, create, state, history (and a
thread's checkpoints as a light list, ours)."""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..graph import RunnableConfig
from ._http import HTTPProblem, route
from ._request import MAX_LIMIT, Fields, query_int, run_config_fields
from ._server import now, read_body, server_of
from ._stopped import mark_stopped, stopped_error
from ._wire_history import checkpoint_entries
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

THREAD_STATUSES = ("idle", "busy", "interrupted", "error")
SORT_FIELDS = ("thread_id", "status", "created_at", "updated_at", "state_updated_at")


# -- assistants --------------------------------------------------------------------------


@route("/assistants/search", ["POST"])
async def assistants_search(request: Request) -> Response:
    server = server_of(request)
    query = Fields(await read_body(request))
    graph_id = query.text("graph_id")
    query.obj("metadata")
    limit, offset = query.integer("limit", 10, 1, MAX_LIMIT), query.integer("offset", 0)
    found = [
        assistant_to_wire(s.graph_id, created_at=s.created_at, description=s.description)
        for s in server.served.values()
        if graph_id in (None, s.graph_id)
    ]
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


@route("/assistants/{assistant_id}/schemas", ["GET"])
async def assistant_schemas(request: Request) -> Response:
    """The graph's input schema when it declares one (``StateGraph(input_schema=...)``), and
    its state's keys (a graph carries no JSON schema of its state's values)."""
    server = server_of(request)
    s = server.assistant(request.path_params["assistant_id"])
    keys: dict[str, Any] = {key: {} for key in s.graph.key_strategies}
    state = {"type": "object", "properties": keys}
    return JSONResponse(
        {
            "graph_id": s.graph_id,
            "input_schema": s.graph.input_schema,
            "output_schema": None,
            "state_schema": state,
            "config_schema": None,
            "context_schema": None,
        }
    )


@route("/assistants/{assistant_id}/subgraphs", ["GET"])
async def assistant_subgraphs(request: Request) -> Response:
    server_of(request).assistant(request.path_params["assistant_id"])
    return JSONResponse({})


# -- threads -----------------------------------------------------------------------------


@route("/threads", ["POST"])
async def threads_create(request: Request) -> Response:
    server = server_of(request)
    given = Fields(await read_body(request))
    thread_id = given.text("thread_id") or str(uuid.uuid4())
    if_exists = given.choice("if_exists", ("raise", "do_nothing"), "raise")
    if given.get("supersteps"):
        raise HTTPProblem(
            422,
            "supersteps are not supported by this server: create the thread, then "
            "POST /threads/{thread_id}/state for each update",
        )
    metadata = given.obj("metadata")
    try:
        record = await server.find_thread(thread_id)
    except HTTPProblem:
        graph_id = metadata.get("graph_id")
        served = graph_id if isinstance(graph_id, str) and graph_id in server.served else None
        record = await server.create_thread(thread_id, metadata, served)
    else:
        if if_exists == "raise":
            raise HTTPProblem(
                409, f"thread {thread_id!r} exists (ask with if_exists='do_nothing' to get it)"
            )
    return JSONResponse(await server.thread_wire(record))


@route("/threads/search", ["POST"])
async def threads_search(request: Request) -> Response:
    server = server_of(request)
    query = Fields(await read_body(request))
    metadata, ids = query.obj("metadata"), query.strings("ids")
    status = query.choice("status", THREAD_STATUSES, "") or None
    limit, offset = query.integer("limit", 10, 1, MAX_LIMIT), query.integer("offset", 0)
    sort_by = query.choice("sort_by", SORT_FIELDS, "updated_at")
    descending = query.choice("sort_order", ("asc", "desc"), "desc") == "desc"
    chosen = [
        r
        for r in await server.all_threads()
        if all(r.metadata.get(k) == v for k, v in metadata.items())
        and (ids is None or r.thread_id in ids)
    ]
    found = [await server.thread_wire(r) for r in chosen]
    if status is not None:
        found = [t for t in found if t["status"] == status]
    found.sort(key=lambda t: str(t[sort_by]), reverse=descending)
    return JSONResponse(
        found[offset : offset + limit], headers={"X-Pagination-Total": str(len(found))}
    )


@route("/threads/{thread_id}", ["GET"])
async def thread_get(request: Request) -> Response:
    server = server_of(request)
    record = await server.find_thread(request.path_params["thread_id"])
    return JSONResponse(await server.thread_wire(record))


@route("/threads/{thread_id}", ["PATCH"])
async def thread_patch(request: Request) -> Response:
    server = server_of(request)
    record = await server.find_thread(request.path_params["thread_id"])
    given = Fields(await read_body(request))
    record.metadata.update(given.obj("metadata"))
    record.updated_at = now()
    await server.save_thread(record)
    if request.headers.get("prefer") == "return=minimal":
        return Response(status_code=204)
    return JSONResponse(await server.thread_wire(record))


@route("/threads/{thread_id}", ["DELETE"])
async def thread_delete(request: Request) -> Response:
    server = server_of(request)
    record = await server.find_thread(request.path_params["thread_id"])
    await server.delete_thread(record)
    return Response(status_code=204)


async def _state(request: Request, checkpoint: Any, subgraphs: bool) -> Response:
    server = server_of(request)
    record = await server.find_thread(request.path_params["thread_id"])
    if checkpoint is not None and not isinstance(checkpoint, str):
        raise HTTPProblem(422, f"checkpoint_id must be a string, got {checkpoint!r}")
    snapshot = await server.snapshot(record, checkpoint, subgraphs=subgraphs)
    if snapshot is None:
        if checkpoint is not None:
            raise HTTPProblem(
                404, f"checkpoint {checkpoint!r} not found on thread {record.thread_id!r}"
            )
        return JSONResponse(empty_state_to_wire())
    state = state_to_wire(snapshot, thread_id=record.thread_id)
    if checkpoint is None:  # the head: left by a stopped run, it is not a breakpoint
        state = mark_stopped(
            state, stopped_error(await server.runs.thread_runs(record.thread_id), snapshot)
        )
    return JSONResponse(state)


def _subgraphs(request: Request) -> bool:
    return request.query_params.get("subgraphs") in ("true", "True", "1")


@route("/threads/{thread_id}/state", ["GET"])
async def thread_state(request: Request) -> Response:
    return await _state(request, None, _subgraphs(request))


@route("/threads/{thread_id}/state/checkpoint", ["POST"])
async def thread_state_at(request: Request) -> Response:
    given = Fields(await read_body(request))
    checkpoint = given.nested("checkpoint")
    return await _state(request, checkpoint.text("checkpoint_id"), given.flag("subgraphs"))


@route("/threads/{thread_id}/state/{checkpoint_id}", ["GET"])
async def thread_state_of(request: Request) -> Response:
    return await _state(request, request.path_params["checkpoint_id"], _subgraphs(request))


@route("/threads/{thread_id}/state", ["POST"])
async def thread_update(request: Request) -> Response:
    server = server_of(request)
    record = await server.find_thread(request.path_params["thread_id"])
    given = await read_body(request)
    fields = Fields(given)
    run_config_fields(fields)
    as_node = fields.text("as_node")
    served_ = server.graph_of(record)
    if served_ is None:
        raise HTTPProblem(422, f"thread {record.thread_id!r} has no graph yet: run it first")
    if await server.runs.busy(record.thread_id):
        raise HTTPProblem(409, f"thread {record.thread_id!r} is busy with a run")
    try:
        config = run_config_from_wire(record.thread_id, given)
        values = input_from_wire(given.get("values"))
        written = await served_.graph.aupdate_state(config, values, as_node)
    except (ValueError, TypeError) as error:  # GraphUsageError is a TypeError
        raise HTTPProblem(422, str(error)) from None
    record.updated_at = now()
    await server.save_thread(record)
    return JSONResponse({"checkpoint": checkpoint_to_wire(record.thread_id, written.checkpoint_id)})


@route("/threads/{thread_id}/history", ["POST"])
async def thread_history(request: Request) -> Response:
    server = server_of(request)
    record = await server.find_thread(request.path_params["thread_id"])
    query = Fields(await read_body(request))
    limit = query.integer("limit", 10, 1, MAX_LIMIT)
    if isinstance(query.get("before"), dict):  # a checkpoint object, or its id
        before = query.nested("before").text("checkpoint_id")
    else:
        before = query.text("before")
    wanted = query.obj("metadata")
    start = query.nested("checkpoint").text("checkpoint_id")
    served_ = server.graph_of(record)
    if served_ is None:
        return JSONResponse([])
    states: list[dict[str, Any]] = []
    if start is not None:  # from that checkpoint on (it included)
        first = await server.snapshot(record, start)
        if first is None:
            raise HTTPProblem(404, f"checkpoint {start!r} not found on thread {record.thread_id!r}")
        before = start
        if all(first.metadata.get(k) == v for k, v in wanted.items()):
            states.append(state_to_wire(first, thread_id=record.thread_id))
    config = RunnableConfig(thread_id=record.thread_id, checkpoint_id=before)
    head = before is None  # the first snapshot read is the thread's head
    async for snapshot in served_.graph.aget_state_history(config, limit=None if wanted else limit):
        if len(states) >= limit:
            break
        if all(snapshot.metadata.get(k) == v for k, v in wanted.items()):
            state = state_to_wire(snapshot, thread_id=record.thread_id)
            if head and snapshot.next:  # left by a stopped run, it is not a breakpoint
                runs = await server.runs.thread_runs(record.thread_id)
                state = mark_stopped(state, stopped_error(runs, snapshot))
            states.append(state)
        head = False
    return JSONResponse(states)


@route("/threads/{thread_id}/checkpoints", ["GET"])
async def thread_checkpoints(request: Request) -> Response:
    """The thread's checkpoints, newest first, without their states (``limit``, up to
    1,000; ``before``: the checkpoints before that one): a history view's list. Each says
    its step, the nodes that wrote it, what runs next, when, and which keys it changed; the
    state at one is ``GET /threads/{id}/state/{checkpoint_id}``."""
    server = server_of(request)
    record = await server.find_thread(request.path_params["thread_id"])
    limit = query_int(request, "limit", 100, 1, MAX_LIMIT)
    before = request.query_params.get("before") or None
    served_ = server.graph_of(record)
    if served_ is None:
        return JSONResponse([])
    config = RunnableConfig(thread_id=record.thread_id, checkpoint_id=before)
    snapshots = [s async for s in served_.graph.aget_state_history(config, limit=limit + 1)]
    return JSONResponse(checkpoint_entries(snapshots, limit))


THREAD_ROUTES = [
    assistants_search,
    assistant_schemas,
    assistant_subgraphs,
    assistant_graph,
    assistant_get,
    threads_create,
    threads_search,
    thread_state,
    thread_state_at,
    thread_state_of,
    thread_update,
    thread_history,
    thread_checkpoints,
    thread_get,
    thread_patch,
    thread_delete,
]
