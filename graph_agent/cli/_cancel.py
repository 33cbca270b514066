"""Ctrl-C in ``graph-agent chat``: cancel the answer being produced, not the chat.

A chat turn runs on a worker thread (``stream_events``), and its model call waits on a
socket there, which no signal reaches. So the chat's model talks through an
``httpx.Client`` with a ``Canceller``: Ctrl-C (``sigint_calls``) shuts down the sockets of
the client's connections, the model call fails at once instead of when the server is done,
and the run stops at that step boundary, its thread left at its last checkpoint.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import httpx

__all__ = ["CancelledRequest", "Canceller", "sigint_calls"]

# httpcore's trace events that hand over a new connection's stream (plain, then TLS).
_NEW_STREAM = ("connection.connect_tcp.complete", "connection.start_tls.complete")


class CancelledRequest(httpx.RequestError):
    """A request refused because the turn was cancelled (not retried: no transport error)."""


class Canceller:
    """Lets ``cancel()`` cut off, from any thread, the requests of an ``httpx.Client``
    made with ``client(...)``.

    Its request hook gives each request httpcore's ``trace`` extension, which hands over the
    socket of every connection the client opens (to the server, or to a proxy from the
    environment: the client stays an ordinary one). ``cancel()`` shuts those sockets down,
    so a request waiting for headers or reading a streamed body fails at once, and refuses
    new requests until ``reset()``. ``wait`` is a ``sleep`` for the model's retries that
    ``cancel()`` cuts short too.
    """

    def __init__(self) -> None:
        self._cancelled = threading.Event()
        self._sockets: list[socket.socket] = []

    def client(self, **options: Any) -> httpx.Client:
        """An ``httpx.Client(**options)`` whose requests ``cancel()`` cuts off."""
        hooks = options.pop("event_hooks", None) or {}
        requests = [self.on_request, *hooks.get("request", ())]
        return httpx.Client(event_hooks={**hooks, "request": requests}, **options)

    @property
    def cancelled(self) -> bool:
        """Whether ``cancel()`` was called since the last ``reset()``."""
        return self._cancelled.is_set()

    def on_request(self, request: httpx.Request) -> None:
        """The client's request hook: refuse when cancelled, else watch for new sockets."""
        if self._cancelled.is_set():
            raise CancelledRequest("the answer was cancelled (Ctrl-C)", request=request)
        request.extensions["trace"] = self._tracer(request.extensions.get("trace"))

    def _tracer(self, previous: Any) -> Callable[[str, dict[str, Any]], None]:
        def trace(name: str, info: dict[str, Any]) -> None:
            if name in _NEW_STREAM:
                stream = info.get("return_value")
                sock = stream.get_extra_info("socket") if stream is not None else None
                if isinstance(sock, socket.socket):
                    # Rebinding the list is atomic: cancel() (a signal handler) takes no lock.
                    self._sockets = [s for s in self._sockets if s.fileno() != -1] + [sock]
            if previous is not None:
                previous(name, info)

        return trace

    def cancel(self) -> None:
        """Cut off every request in flight and refuse new ones until ``reset()``. Safe in a
        signal handler: it takes no lock."""
        self._cancelled.set()
        for sock in list(self._sockets):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def reset(self) -> None:
        """Accept requests again (a new turn)."""
        self._cancelled.clear()

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds``, or less when ``cancel()`` is called meanwhile."""
        self._cancelled.wait(seconds)


@contextlib.contextmanager
def sigint_calls(action: Callable[[], None]) -> Iterator[None]:
    """Inside the block, Ctrl-C (SIGINT) calls ``action()`` instead of raising
    ``KeyboardInterrupt``; the previous handler is back afterwards. Outside the main thread
    (where no signal handler can be set) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        action()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:  # a handler set from C reads as None: Python's own is the closest to it
        signal.signal(
            signal.SIGINT, previous if previous is not None else signal.default_int_handler
        )
