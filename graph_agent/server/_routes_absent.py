"""The Agent Protocol's endpoints this server does not serve, answered with a JSON 404 that
says so and what to do instead (without these, some would match a served path with another
method: ``POST /runs/batch`` is ``/runs/{run_id}``'s)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

__all__ = ["ABSENT_ROUTES"]

_CRONS = "crons are not served by this server: start runs on a schedule from outside it"
_STORE = "the store API (long-term memory) is not served by this server"
_VERSIONS = "assistant versions are not served by this server: each served object is one assistant"
_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
_NOT_SERVED = {
    "/runs/batch": "batches of runs are not served by this server: start each with POST /runs",
    "/runs/crons": _CRONS,
    "/runs/crons/{rest:path}": _CRONS,
    "/threads/{thread_id}/runs/crons": _CRONS,
    "/store/{rest:path}": _STORE,
    "/assistants/{assistant_id}/versions": _VERSIONS,
    "/assistants/{assistant_id}/latest": _VERSIONS,
}


def _routes() -> list[BaseRoute]:
    routes: list[BaseRoute] = []
    for path, detail in _NOT_SERVED.items():

        async def answer(request: Request, detail: str = detail) -> Response:
            return JSONResponse({"detail": f"{request.method} {request.url.path}: {detail}"}, 404)

        routes.append(Route(path, answer, methods=_METHODS))
    return routes


ABSENT_ROUTES = _routes()
