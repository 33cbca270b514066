"""The server's access log: one line per HTTP request, ``METHOD PATH STATUS TIME ms``, at INFO
on the ``graph_agent.server.access`` logger (``graph-agent serve`` shows it on stderr unless
``--no-access-log``).

The line is written when the response has ended: a stream's (Server-Sent Events, a long
``wait``) once its last byte is sent or its client has gone, with the time it lasted. A
request that failed before it was answered is logged with 500, the status the server then
answers with. The query string is left out (only the path).
"""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["ACCESS_LOGGER", "AccessLog"]

ACCESS_LOGGER = "graph_agent.server.access"
_log = logging.getLogger(ACCESS_LOGGER)


class AccessLog:
    """ASGI middleware writing the access log's line of each HTTP request (nothing is done
    while the logger would drop INFO records)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # unless the app answers: what the server sends for a failure

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_noting_status)
        finally:
            took = (time.perf_counter() - started) * 1000
            _log.info("%s %s %d %.1f ms", scope["method"], scope["path"], status, took)
