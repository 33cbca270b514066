"""The routes of assistants and threads: search, read, create, state, history."""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..graph import RunnableConfig
from ._http import HTTPProblem, route
from ._server import now, read_body, server_of
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


@route("/assistants/{assistant_id}/schemas", ["GET"])
async def assistant_schemas(request: Request) -> Response:
    """The state's keys (our graphs carry no JSON schema of their values)."""
    server = server_of(request)
    s = server.assistant(request.path_params["assistant_id"])
    keys: dict[str, Any] = {key: {} for key in s.graph.key_strategies}
    state = {"type": "object", "properties": keys}
    return JSONResponse(
        {
            "graph_id": s.graph_id,
            "input_schema": None,
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


def _metadata(given: Any, what: str = "metadata") -> dict[str, Any]:
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise HTTPProblem(422, f"{what} must be a JSON object, got {type(given).__name__}")
    return given


@route("/threads", ["POST"])
async def threads_create(request: Request) -> Response:
    server = server_of(request)
    given = await read_body(request)
    thread_id = given.get("thread_id") or str(uuid.uuid4())
    if not isinstance(thread_id, str):
        raise HTTPProblem(422, f"thread_id must be a string, got {thread_id!r}")
    if_exists = given.get("if_exists") or "raise"
    if if_exists not in ("raise", "do_nothing"):
        raise HTTPProblem(422, f"if_exists {if_exists!r} is not 'raise' or 'do_nothing'")
    if given.get("supersteps"):
        raise HTTPProblem(
            422,
            "supersteps are not supported by this server: create the thread, then "
            "POST /threads/{thread_id}/state for each update",
        )
    metadata = _metadata(given.get("metadata"))
    try:
        record = await server.find_thread(thread_id)
    except HTTPProblem:
        graph_id = metadata.get("graph_id")
        record = server.create_thread(
            thread_id, metadata, graph_id if graph_id in server.served else None
        )
    else:
        if if_exists == "raise":
            raise HTTPProblem(
                409, f"thread {thread_id!r} exists (ask with if_exists='do_nothing' to get it)"
            )
    return JSONResponse(await server.thread_wire(record))


@route("/threads/search", ["POST"])
async def threads_search(request: Request) -> Response:
    server = server_of(request)
    query = await read_body(request)
    metadata, ids, status = _metadata(query.get("metadata")), query.get("ids"), query.get("status")
    try:
        limit, offset = int(query.get("limit") or 10), int(query.get("offset") or 0)
    except (TypeError, ValueError):
        raise HTTPProblem(422, "limit and offset must be integers") from None
    if ids is not None and not isinstance(ids, list):
        raise HTTPProblem(422, "ids must be a list of thread ids")
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


@route("/threads/{thread_id}", ["PATCH"])
async def thread_patch(request: Request) -> Response:
    server = server_of(request)
    record = await server.find_thread(request.path_params["thread_id"])
    given = await read_body(request)
    record.metadata.update(_metadata(given.get("metadata")))
    record.updated_at = now()
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
    return JSONResponse(state_to_wire(snapshot, thread_id=record.thread_id))


def _subgraphs(request: Request) -> bool:
    return request.query_params.get("subgraphs") in ("true", "True", "1")


@route("/threads/{thread_id}/state", ["GET"])
async def thread_state(request: Request) -> Response:
    return await _state(request, None, _subgraphs(request))


@route("/threads/{thread_id}/state/checkpoint", ["POST"])
async def thread_state_at(request: Request) -> Response:
    given = await read_body(request)
    checkpoint = _metadata(given.get("checkpoint"), "checkpoint")
    return await _state(request, checkpoint.get("checkpoint_id"), bool(given.get("subgraphs")))


@route("/threads/{thread_id}/state/{checkpoint_id}", ["GET"])
async def thread_state_of(request: Request) -> Response:
    return await _state(request, request.path_params["checkpoint_id"], _subgraphs(request))


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
    try:
        limit = int(query.get("limit") or 10)
    except (TypeError, ValueError):
        raise HTTPProblem(422, f"limit must be an integer, got {query.get('limit')!r}") from None
    before = query.get("before")
    if isinstance(before, dict):
        before = before.get("checkpoint_id")
    if before is not None and not isinstance(before, str):
        raise HTTPProblem(422, "before must be a checkpoint id or a checkpoint object")
    wanted = _metadata(query.get("metadata"))
    start = _metadata(query.get("checkpoint"), "checkpoint").get("checkpoint_id")
    states: list[dict[str, Any]] = []
    if isinstance(start, str):  # from that checkpoint on (it included)
        first = await server.snapshot(record, start)
        if first is None:
            raise HTTPProblem(404, f"checkpoint {start!r} not found on thread {record.thread_id!r}")
        before = start
        if all(first.metadata.get(k) == v for k, v in wanted.items()):
            states.append(state_to_wire(first, thread_id=record.thread_id))
    config = RunnableConfig(thread_id=record.thread_id, checkpoint_id=before)
    async for snapshot in served_.graph.aget_state_history(config, limit=None if wanted else limit):
        if len(states) >= limit:
            break
        if all(snapshot.metadata.get(k) == v for k, v in wanted.items()):
            states.append(state_to_wire(snapshot, thread_id=record.thread_id))
    return JSONResponse(states)


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
    thread_get,
    thread_patch,
    thread_delete,
]
