"""A TCP proxy for fault tests: it sits between clients and a real server on 127.0.0.1 and
can pass traffic through, stall (read everything, forward nothing, so replies never come)
or cut connections in the middle of a reply. Threads and blocking sockets only."""

from __future__ import annotations

import contextlib
import random
import socket
import threading
from typing import Literal

Mode = Literal["pass", "stall", "cut"]

__all__ = ["Mode", "TcpProxy"]


class _Pair:
    """One client connection and the upstream connection made for it. Both pumps shut the
    pair down when they stop; the second one to stop closes the sockets, so no socket is
    closed while the other pump may still be inside ``recv`` on it."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self._lock = threading.Lock()
        self._running = 2

    def shutdown(self) -> None:
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):  # not connected any more, or closed already
                sock.shutdown(socket.SHUT_RDWR)

    def pump_stopped(self) -> bool:
        """Shut the pair down; ``True`` once both pumps have stopped (the sockets closed)."""
        self.shutdown()
        with self._lock:
            self._running -= 1
            last = self._running == 0
        if last:
            self.client.close()
            self.upstream.close()
        return last


class TcpProxy:
    """Listens on ``127.0.0.1`` (``host``, ``port``) and forwards every connection to
    ``(upstream_host, upstream_port)``, as ``mode`` says at the moment each chunk arrives:

    - ``"pass"``: forward both ways;
    - ``"stall"``: accept connections and read what both sides send, forward nothing (a
      request never reaches the server, a reply never reaches the client);
    - ``"cut"``: forward requests; of a reply, forward only its first half and then close
      both connections (``cut_ratio`` of the replies, chosen with a seeded random; the
      others pass).

    ``cuts`` counts the replies cut, ``stalled`` the chunks swallowed. ``close()`` (or the
    ``with`` block's end) closes every socket and waits for the proxy's threads.
    """

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1", seed: int = 0):
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(256)
        self._listener.settimeout(0.05)  # accept() polls, so close() need not interrupt it
        self.host, self.port = self._listener.getsockname()[:2]
        self._mode: Mode = "pass"
        self._cut_ratio = 1.0
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._pairs: set[_Pair] = set()
        self._threads: list[threading.Thread] = []
        self._closed = threading.Event()
        self.cuts = 0
        self.stalled = 0
        self.connections = 0
        self._start(self._accept, "proxy-accept")

    @property
    def address(self) -> str:
        """``host:port`` of the proxy, as a saver's errors name it."""
        return f"{self.host}:{self.port}"

    @property
    def mode(self) -> Mode:
        return self._mode

    def set_mode(self, mode: Mode, *, cut_ratio: float = 1.0) -> None:
        """Switch what happens to the chunks that arrive from now on."""
        with self._lock:
            self._mode, self._cut_ratio = mode, cut_ratio

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            pairs = list(self._pairs)
        for pair in pairs:
            pair.shutdown()  # wakes both pumps, which close the sockets
        for thread in list(self._threads):
            thread.join(timeout=10)
        self._listener.close()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _start(self, target: object, name: str, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)  # type: ignore[arg-type]
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except (TimeoutError, BlockingIOError):
                continue
            except OSError:
                return
            client.settimeout(None)
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()  # the server is down: the client sees its connection closed
                continue
            upstream.settimeout(None)
            pair = _Pair(client, upstream)
            with self._lock:
                if self._closed.is_set():
                    pair.shutdown()
                    client.close()
                    upstream.close()
                    return
                self._pairs.add(pair)
                self.connections += 1
            self._start(self._pump, "proxy-requests", pair, client, upstream, False)
            self._start(self._pump, "proxy-replies", pair, upstream, client, True)

    def _pump(
        self, pair: _Pair, source: socket.socket, target: socket.socket, replies: bool
    ) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    return
                with self._lock:
                    mode = self._mode
                    cut = mode == "cut" and replies and self._random.random() < self._cut_ratio
                    if mode == "stall":
                        self.stalled += 1
                    if cut:
                        self.cuts += 1
                if mode == "stall":
                    continue
                if cut:
                    target.sendall(data[: len(data) // 2])
                    return  # then both connections close: the client has half a reply
                target.sendall(data)
        except OSError:
            return  # either side closed or reset
        finally:
            if pair.pump_stopped():
                with self._lock:
                    self._pairs.discard(pair)
