"""The server's loop said to be asyncio's once per request and once for its lifespan's tasks
(the MCP SDK's sessions), for anyio to read: Starlette's responses and the MCP SDK call
anyio hundreds of times a request, and anyio asks ``sniffio`` which library runs the loop
on each call, which sniffs for it each time unless told (about 6 % of the server's CPU under
MCP calls, in a py-spy profile of W18's workload)."""

from __future__ import annotations

from contextvars import ContextVar

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["AsyncioDeclared", "declare_asyncio"]

_LIBRARY: ContextVar[str | None] | None
try:
    from sniffio import current_async_library_cvar as _LIBRARY
except ImportError:  # pragma: no cover - without sniffio, anyio does not ask it
    _LIBRARY = None


def declare_asyncio() -> None:
    """Say, in this context (and the tasks it starts), that the loop is asyncio's."""
    if _LIBRARY is not None:
        _LIBRARY.set("asyncio")


class AsyncioDeclared:
    """ASGI middleware: each request's context says its loop is asyncio's."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        declare_asyncio()
        await self.app(scope, receive, send)
