"""The web page at ``/``: pick an agent and a thread, chat with streamed answers, stop a
run, approve, edit or reject an interrupt, and see each run as a timeline and the agent's
graph.

Plain HTML, CSS and JavaScript modules in ``static/`` (``main.js`` imports the others, each
served as ``text/javascript`` with the page's headers, as a browser wants a module; shipped
as package data; no build step, no external library, works offline). The page speaks only
the public Agent Protocol endpoints the server answers to any client
(``/assistants/search``, ``/threads``, ``.../state``, ``.../runs/stream`` with the
``run_events`` mode, ``.../runs/{id}/stream`` to rejoin, ``.../runs/{id}/cancel`` to stop,
and ``/assistants/{id}/graph``).

The page itself holds no data, so it is served ahead of the bearer-token check
(``mount_page``): a browser can load it, and it asks for the token the API wants.
"""

from __future__ import annotations

import mimetypes
import re
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["STATIC", "PageFirst", "mount_page", "page_routes"]

STATIC = Path(__file__).with_name("static")

# The page loads nothing from elsewhere and runs no inline script: a browser holds it to that.
_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
}
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}


def _file(name: str) -> Response:
    path = STATIC / name
    if not _FILE_NAME.fullmatch(name) or ".." in name or not path.is_file():
        return JSONResponse({"detail": f"no page file {name!r}"}, 404)
    media_type = _TYPES.get(path.suffix) or mimetypes.guess_type(name)[0] or "text/plain"
    if media_type.startswith("text/"):
        media_type += "; charset=utf-8"
    return FileResponse(path, media_type=media_type, headers=_HEADERS)


async def _index(request: Request) -> Response:
    return _file("index.html")


async def _static(request: Request) -> Response:
    return _file(request.path_params["name"])


def page_routes() -> list[BaseRoute]:
    """``GET /`` (the page) and ``GET /static/{name}`` (its files)."""
    return [
        Route("/", _index, methods=["GET", "HEAD"]),
        Route("/static/{name}", _static, methods=["GET", "HEAD"]),
    ]


class PageFirst:
    """ASGI middleware answering the page's routes before the app (and its auth) sees the
    request; everything else goes on to the app."""

    def __init__(self, app: ASGIApp, routes: list[BaseRoute]) -> None:
        self.app = app
        self.router = Router(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and any(
            route.matches(scope)[0] is Match.FULL for route in self.router.routes
        ):
            await self.router(scope, receive, send)
            return
        await self.app(scope, receive, send)


def mount_page(app: Starlette) -> None:
    """Serve the page at ``/`` on ``app``, ahead of its middleware (call it after the
    others are added: Starlette runs the last one added first)."""
    app.add_middleware(PageFirst, routes=page_routes())
