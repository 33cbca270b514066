"""The Starlette app that serves agents, flows and graphs over the Agent Protocol (the
requests and responses of LangGraph's Agent Server, as ``langgraph-sdk`` sends and reads
them), and over A2A, AG-UI and MCP, each an adapter over the same runs."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

from starlette.applications import Starlette

from ..runs import RunService, RunStore
from ._a2a_routes import a2a_routes
from ._access_log import AccessLog
from ._agui import AGUI_ROUTES
from ._asyncio_declared import AsyncioDeclared, declare_asyncio
from ._guard import protect
from ._http import DEFAULT_MAX_BODY, ERROR_HANDLERS, HEARTBEAT_SECONDS
from ._mcp import mcp_endpoint
from ._page import mount_page
from ._routes_absent import ABSENT_ROUTES
from ._routes_runs import RUN_ROUTES
from ._routes_threads import THREAD_ROUTES
from ._server import Server

__all__ = ["create_app"]


def create_app(
    served: Mapping[str, Any],
    *,
    token: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    heartbeat: float = HEARTBEAT_SECONDS,
    allow_origins: Iterable[str] = (),
    allow_hosts: Iterable[str] | None = None,
    runs: RunStore | RunService | None = None,
) -> Starlette:
    """An ASGI app serving ``served`` (name -> agent, flow or compiled graph) over the Agent
    Protocol, A2A (``/a2a/{assistant_id}``, docs/a2a.md), AG-UI (``POST
    /ag-ui/{assistant_id}``, docs/ag-ui.md) and MCP (``/mcp``, docs/mcp.md): a run started
    over one is read, answered and cancelled over the others. With ``token``, every request needs ``Authorization: Bearer <token>`` (or
    ``X-Api-Key: <token>``); bodies over ``max_body`` bytes are refused (413); a quiet stream
    or a long ``wait`` sends a keep-alive every ``heartbeat`` seconds. A browser's request
    from a page of another origin is refused (403) unless ``allow_origins`` names it
    (``"http://localhost:3000"``: those get CORS headers too), and a body must be sent as
    ``application/json`` (415). With ``allow_hosts``, a request whose ``Host`` names another
    host is refused (403): on a loopback address, what keeps a page of another site out
    that reaches the server through DNS rebinding. Every error is JSON, ``{"detail": ...}``.

    ``runs`` keeps the run records, their logs and the thread records (default: in
    this process's memory); with a durable store (``SqliteRunStore``), a restarted app lists
    the earlier runs and threads, and takes up, when it starts, the runs it had accepted but
    not finished. A ``RunService`` given instead runs them its way (a ``QueuedRunService``:
    on workers). The caller closes the store it gave."""
    if heartbeat <= 0:
        raise ValueError(f"heartbeat must be a positive number of seconds, got {heartbeat!r}")
    server = Server(served, max_body, heartbeat, runs)
    mcp = mcp_endpoint(server)  # /mcp: every served agent as an MCP tool
    routes = [*mcp.routes, *ABSENT_ROUTES, *THREAD_ROUTES, *RUN_ROUTES]
    routes += a2a_routes(secured=bool(token))  # /a2a/{assistant_id}: A2A over the same runs
    routes += AGUI_ROUTES  # POST /ag-ui/{assistant_id}: AG-UI 1.0 over the same runs

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        declare_asyncio()  # for the tasks it starts: the MCP SDK's sessions
        await server.recover()
        try:
            async with mcp.running():
                yield
        finally:
            await server.runs.release()

    app = Starlette(routes=routes, exception_handlers=dict(ERROR_HANDLERS), lifespan=lifespan)
    app.state.server = server
    # auth, JSON bodies, origins, hosts
    protect(app, token=token, allow_origins=allow_origins, allow_hosts=allow_hosts)
    mount_page(app)  # the web page at /, served ahead of the auth: it asks for the token
    app.add_middleware(AccessLog)  # one line per request, the page's too
    app.add_middleware(AsyncioDeclared)  # outermost: anyio reads the loop, not sniffs it
    return app
