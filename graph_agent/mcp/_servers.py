"""Where an MCP server is (a command to start over stdio, or a streamable-HTTP URL) and how to
open its transport."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import os
import signal
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.to_thread

__all__ = ["HttpServer", "StdioServer", "Transport"]

_log = logging.getLogger("graph_agent.mcp")


@dataclasses.dataclass(frozen=True)
class StdioServer:
    """A server started as a subprocess that speaks MCP on its stdin and stdout.

    The process gets the SDK's minimal environment (``PATH``, ``HOME``, ``USER``, ... but not
    the rest of this process's environment, which may hold secrets) plus ``env``; it runs in
    ``cwd`` (default: the current directory). ``name`` (default: the name the server gives
    itself) names it in errors and logs, and prefixes its tools with ``prefix=True``. Its
    stderr is logged at DEBUG by ``graph_agent.mcp``, and its last lines go into the error
    when it fails to start or crashes.
    """

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    name: str | None = None

    def __repr__(self) -> str:  # env values may hold secrets: never shown
        named = f", name={self.name!r}" if self.name is not None else ""
        return f"StdioServer({self.command!r}, {list(self.args)!r}{named})"

    @property
    def transport(self) -> str:
        """``"stdio"``."""
        return "stdio"

    def describe(self) -> str:
        """The command line (the server's name until it tells its own)."""
        return " ".join([self.command, *self.args])

    @contextlib.asynccontextmanager
    async def open(self, name: Callable[[], str]) -> AsyncIterator[Transport]:
        """Start the process; on leaving, close its stdin and wait for it (the SDK terminates
        it if it does not exit within two seconds)."""
        from mcp.client.stdio import StdioServerParameters, stdio_client

        parameters = StdioServerParameters(
            command=self.command,
            args=list(self.args),
            env=dict(self.env) if self.env is not None else None,
            cwd=self.cwd,
        )
        stderr = _Stderr(name)
        try:
            client = stdio_client(parameters, errlog=stderr.file)
            async with client as (read, write):
                stderr.file.close()  # the server holds its own copy
                yield Transport(read, write, _process_of(client), stderr)
        finally:
            stderr.file.close()


@dataclasses.dataclass(frozen=True)
class HttpServer:
    """A server at ``url`` speaking MCP's streamable HTTP transport. ``headers`` (an
    ``Authorization`` token, say) go with every request and are never logged or shown;
    ``name`` as for ``StdioServer``."""

    url: str
    headers: Mapping[str, str] | None = None
    name: str | None = None

    def __repr__(self) -> str:  # headers may hold tokens: never shown
        named = f", name={self.name!r}" if self.name is not None else ""
        return f"HttpServer({self.url!r}{named})"

    @property
    def transport(self) -> str:
        """``"streamable HTTP"``."""
        return "streamable HTTP"

    def describe(self) -> str:
        """The URL (the server's name until it tells its own)."""
        return self.url

    @contextlib.asynccontextmanager
    async def open(self, name: Callable[[], str]) -> AsyncIterator[Transport]:
        """Connect; on leaving, end the session (an HTTP DELETE) and close the client."""
        from ._sdk import http_streams

        async with http_streams(self.url, self.headers) as (read, write):
            yield Transport(read, write)


class Transport:
    """An open transport: the streams a ``ClientSession`` uses and, over stdio, the process
    (for its exit code) and its stderr."""

    def __init__(
        self, read: Any, write: Any, process: Any = None, stderr: _Stderr | None = None
    ) -> None:
        self.read = read
        self.write = write
        self._process = process
        self._stderr = stderr

    async def ended(self) -> str:
        """What happened to a server whose messages stopped: how its process ended (waiting
        up to a second for it), else that it closed the connection."""
        process = self._process
        if process is None:
            return "closed the connection"
        with anyio.move_on_after(1.0):
            await process.wait()
        if process.returncode is None:
            return "closed its stdout (its process still runs)"
        if self._stderr is not None:  # its last words: the pipe closes once it has exited
            await anyio.to_thread.run_sync(self._stderr.drain, 0.5)
        return _exit_text(process.returncode)

    def exit_text(self) -> str | None:
        """How the server's process ended, if it has."""
        process = self._process
        if process is None or process.returncode is None:
            return None
        return _exit_text(process.returncode)

    def stderr_tail(self, lines: int) -> list[str]:
        """The last ``lines`` non-blank lines the server wrote to stderr."""
        return self._stderr.tail(lines) if self._stderr is not None else []


def _exit_text(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


def _process_of(client: Any) -> Any:
    """The process ``stdio_client`` started, for its exit code: the SDK does not hand it out,
    so it is read from the suspended context manager's frame. ``None`` if an SDK version
    keeps it elsewhere (errors then say the server closed the connection, without the code)."""
    frame = getattr(getattr(client, "gen", None), "ag_frame", None)
    process = frame.f_locals.get("process") if frame is not None else None
    return process if hasattr(process, "returncode") and hasattr(process, "wait") else None


class _Stderr:
    """A stdio server's stderr: a pipe read by a daemon thread, which logs each line at DEBUG
    and keeps the last ones for error messages."""

    def __init__(self, name: Callable[[], str]) -> None:
        read_fd, write_fd = os.pipe()
        self._name = name
        self._reader = os.fdopen(read_fd, encoding="utf-8", errors="replace")
        self.file = os.fdopen(write_fd, "w", encoding="utf-8")
        self._lines: collections.deque[str] = collections.deque(maxlen=20)
        self._thread = threading.Thread(target=self._read, name="mcp-server-stderr", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with self._reader:
            for raw in self._reader:
                line = raw.rstrip("\r\n")
                self._lines.append(line)
                _log.debug("MCP server '%s' stderr: %s", self._name(), line)

    def drain(self, seconds: float) -> None:
        """Wait up to ``seconds`` for the server's output to end (the pipe closes when the
        process and any children holding it have exited)."""
        self._thread.join(seconds)

    def tail(self, lines: int) -> list[str]:
        """The last ``lines`` non-blank lines."""
        return [line for line in list(self._lines) if line.strip()][-lines:]
