"""HTTP plumbing of the server: JSON errors, token auth, and Server-Sent Events with ids.

Every error is a JSON body ``{"detail": "..."}`` with the right status (the shape
``langgraph-sdk`` reads), Starlette's own (404, 405) and a fault's (500) too; what a client
sends is read in ``_request``.
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ._wire_stream import HEARTBEAT, sse_event

__all__ = [
    "DEFAULT_MAX_BODY",
    "ERROR_HANDLERS",
    "HEARTBEAT_SECONDS",
    "BearerAuth",
    "HTTPProblem",
    "json_when_ready",
    "problem_response",
    "route",
    "sse_response",
]

DEFAULT_MAX_BODY = 10 * 1024 * 1024  # bytes a request body may have
HEARTBEAT_SECONDS = 5.0  # a quiet stream or a long wait sends a keep-alive this often


class HTTPProblem(Exception):
    """An error to answer with ``status`` and ``{"detail": detail}``."""

    def __init__(self, status: int, detail: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = dict(headers or {})


def problem_response(problem: HTTPProblem) -> JSONResponse:
    return JSONResponse({"detail": problem.detail}, problem.status, headers=problem.headers)


Handler = Callable[[Request], Awaitable[Response]]


def route(path: str, methods: list[str]) -> Callable[[Handler], Route]:
    """A decorator making ``handler`` the route of ``path``; an ``HTTPProblem`` it raises is
    answered as JSON with its status."""

    def wrap(handler: Handler) -> Route:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except HTTPProblem as problem:
                return problem_response(problem)

        return Route(path, endpoint, methods=methods)

    return wrap


class BearerAuth:
    """ASGI middleware: with a ``token``, every HTTP request but ``open_paths`` needs it, as
    ``Authorization: Bearer <token>`` or ``X-Api-Key: <token>`` (``langgraph-sdk``'s
    ``api_key=``), compared in constant time; else 401."""

    def __init__(self, app: ASGIApp, token: str, open_paths: tuple[str, ...] = ()) -> None:
        self.app = app
        self.bearer = f"Bearer {token}".encode()
        self.key = token.encode()
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in self.open_paths:
            await self.app(scope, receive, send)
            return
        bearer = key = b""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                bearer = value
            elif name == b"x-api-key":
                key = value
        # both compared, whichever was sent: the time taken says nothing of either
        good_bearer = hmac.compare_digest(bearer, self.bearer)
        good_key = hmac.compare_digest(key, self.key)
        if not (good_bearer or good_key):
            response = JSONResponse(
                {
                    "detail": "missing or wrong token: send Authorization: Bearer <token> "
                    "(or X-Api-Key: <token>, langgraph-sdk's api_key=)"
                },
                401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def _http_error(request: Request, error: Exception) -> Response:
    """Starlette's own errors (no such route, a method the route does not take) as JSON."""
    assert isinstance(error, HTTPException)
    where = f"{request.method} {request.url.path}"
    detail: Any = error.detail
    if error.status_code == 404:
        detail = f"{where} is not served here (docs/serving.md lists the endpoints)"
    elif error.status_code == 405:
        allowed = (error.headers or {}).get("Allow", "")
        detail = f"{where}: the method is not allowed here (allowed: {allowed})"
    return JSONResponse({"detail": detail}, error.status_code, headers=error.headers)


async def _internal_error(request: Request, error: Exception) -> Response:
    """A fault of the server's (the traceback goes to its log) as JSON, saying no more."""
    return JSONResponse({"detail": "An internal error occurred"}, 500)


# the app's exception handlers: every error answer is JSON, {"detail": ...}
ERROR_HANDLERS: Mapping[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
    HTTPException: _http_error,
    Exception: _internal_error,
}


class SSEEvent(Protocol):
    """What ``sse_response`` writes: an event's ``id``, its name and its JSON-able data."""

    @property
    def id(self) -> str | None: ...
    @property
    def event(self) -> str: ...
    @property
    def data(self) -> Any: ...


def sse_response(
    batches: AsyncIterator[Sequence[SSEEvent]], headers: Mapping[str, str] | None = None
) -> Response:
    """A ``text/event-stream`` of the events of ``batches``, each batch in one write; an
    empty batch is a heartbeat comment (proxies close quiet connections). Nothing is
    buffered on the way."""

    async def body() -> AsyncIterator[bytes]:
        async for batch in batches:
            if not batch:
                yield HEARTBEAT
            else:
                yield b"".join(sse_event(e.event, e.data, e.id) for e in batch)

    return StreamingResponse(
        body(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no", **(headers or {})},
    )


def json_when_ready(
    answer: Awaitable[Any],
    headers: Mapping[str, str] | None = None,
    *,
    heartbeat: float = HEARTBEAT_SECONDS,
) -> Response:
    """A 200 JSON response whose body is ``answer``'s value once it is ready, preceded by a
    newline each ``heartbeat`` seconds until then (JSON parsers skip the leading whitespace;
    proxies see a live connection), as LangGraph's server answers ``runs.wait``."""

    async def body() -> AsyncIterator[bytes]:
        ready = asyncio.ensure_future(answer)
        try:
            while not (await asyncio.wait({ready}, timeout=heartbeat))[0]:
                yield b"\n"
            yield _json_bytes(ready.result())
        finally:
            ready.cancel()  # the client went away first (a no-op once answered)

    return StreamingResponse(body(), media_type="application/json", headers=dict(headers or {}))


def _json_bytes(value: Any) -> bytes:
    """``value`` as Starlette's ``JSONResponse`` writes it."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
