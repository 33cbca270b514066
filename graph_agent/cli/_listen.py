"""Listening for ``graph-agent serve``: the socket is bound and listening before the server
says where it serves, so the line it prints is true when a reader sees it, and a port that is
taken is a one-line error instead of a traceback after that line."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from ._errors import CliError

__all__ = ["bound_socket", "listen_and_serve"]

BACKLOG = 2048  # uvicorn's default


def bound_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` and listening; :class:`CliError` when it cannot be."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(BACKLOG)
    except OSError as error:
        sock.close()
        reason = error.strerror or str(error)
        raise CliError(
            f"cannot listen on {host}:{port}: {reason} (choose another --port, or stop what "
            "listens there)"
        ) from None
    return sock


def listen_and_serve(app: Any, host: str, port: int, announce: Callable[[], None]) -> None:
    """Bind ``host:port``, call ``announce`` once it accepts connections, then serve ``app``
    on uvicorn until it is stopped (Ctrl-C, SIGTERM)."""
    import uvicorn

    sock = bound_socket(host, port)
    try:
        announce()
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    finally:
        sock.close()
