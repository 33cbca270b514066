"""Server-sent events (``text/event-stream``) of OpenAI-compatible chat-completion streams.

``SSEDecoder`` turns raw bytes into the data of complete events. It splits lines on
``\\n``, ``\\r\\n`` and ``\\r`` only, as the SSE spec says (not on the other characters
``str.splitlines`` knows, such as U+2028, which may appear unescaped inside JSON), ignores
comments (``:``) and fields other than ``data``, and joins multi-line data with ``\\n``.

``sse_chunks`` turns the events into ``ChatResponse`` chunks, stops at ``data: [DONE]``, and
raises ``ModelError`` for an event that is not JSON, an error event, or a stream that ends
before ``[DONE]`` (after yielding every chunk that did arrive). It is written once, as logic
that asks for the stream's bytes piece by piece (a ``Pull``); ``iter_chunks`` runs it over
bytes at hand.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .._runtime.streams import END, Pull, Streamed, stream
from ..errors import ModelError
from ._openai_wire import chunk_from_event, error_detail, truncate
from .types import ChatResponse

__all__ = ["SSEDecoder", "iter_chunks", "sse_chunks"]

_EOL = re.compile(rb"\r\n|\r|\n")
_DONE = "[DONE]"


class SSEDecoder:
    """Incremental decoder: ``feed(bytes)`` returns the data of the events completed so far;
    ``close()`` returns the data of an event the stream left unfinished (no blank line after
    it), or ``None``. Bytes may be split anywhere, even inside ``\\r\\n`` or a UTF-8 character.
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._data: list[str] = []
        self._error: list[str] = []  # llama.cpp's "error:" field lines
        self._kind = ""  # the "event:" field of the event being read
        self._started = False

    def feed(self, data: bytes) -> list[str]:
        self._buffer.extend(data)
        events: list[str] = []
        consumed = 0
        for match in _EOL.finditer(self._buffer):
            if match.end() == len(self._buffer) and match.group() == b"\r":
                break  # maybe the first half of a \r\n: wait for the next bytes
            event = self._line(bytes(self._buffer[consumed : match.start()]))
            if event is not None:
                events.append(event)
            consumed = match.end()
        del self._buffer[:consumed]
        return events

    def close(self) -> str | None:
        if self._buffer:
            line = bytes(self._buffer).rstrip(b"\r")
            self._buffer.clear()
            event = self._line(line)  # a last "\r" ends the line, or the event
            if event is not None:
                return event
        return self._dispatch()

    def _line(self, raw: bytes) -> str | None:
        line = raw.decode("utf-8", errors="replace")
        if not self._started:
            self._started = True
            line = line.removeprefix("\ufeff")
        if not line:  # a blank line ends the event; one with empty data is not dispatched
            return self._dispatch()
        if line.startswith(":"):  # a comment (keep-alive)
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "error":
            self._error.append(value)
        elif field == "event":
            self._kind = value
        return None  # id:, retry: and unknown fields are ignored

    def _dispatch(self) -> str | None:
        data, error, kind = "\n".join(self._data), "\n".join(self._error), self._kind
        self._data, self._error, self._kind = [], [], ""
        if error or (kind == "error" and data):
            return _as_error_event(error or data)
        return data if data else None


def _as_error_event(text: str) -> str:
    """An error the server sent as an ``error:`` field or an ``event: error``, as the data
    of an error event (``{"error": ...}``), keeping the server's message."""
    try:
        detail: Any = json.loads(text)
    except (ValueError, RecursionError):
        detail = {"message": text}
    if not isinstance(detail, dict) or "error" not in detail:
        detail = {"error": detail if isinstance(detail, (dict, str)) else {"message": text}}
    return json.dumps(detail)


class _Chunks:
    """Turns event data into chunks, counting them."""

    def __init__(self, status: int | None, redact: Callable[[str], str]) -> None:
        self.status = status
        self.redact = redact
        self.events = 0

    def check_idle(self, idle: float | None, waited: float) -> None:
        """``ModelError`` when the stream was waited on for ``idle`` seconds since its last
        event (time the reader spent elsewhere does not count)."""
        if idle is not None and waited > idle:
            raise ModelError(
                f"the stream brought no event for {idle:g} s after event {self.events} (only "
                "keep-alive bytes): the server stalled; raise stream_idle_timeout if it is "
                "just slow",
                status=self.status,
            )

    def parse(self, data: str) -> ChatResponse:
        self.events += 1
        try:
            event: Any = json.loads(data)
        except (ValueError, RecursionError) as error:  # RecursionError: absurdly deep JSON
            reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
            raise ModelError(
                f"stream event {self.events} is not JSON: {reason}",
                status=self.status,
                body=truncate(self.redact(data)),
            ) from None
        return chunk_from_event(event, status=self.status, body=data, redact=self.redact)

    def unfinished(self, pending: str | None, head: bytes = b"") -> Iterator[ChatResponse]:
        """What to do when the bytes end: finish at a last ``[DONE]`` that lacks its blank
        line, else yield a complete last event and raise "ended before [DONE]". ``head``:
        the first bytes, when no event came (a JSON error body sent as an event stream)."""
        if pending is not None and pending.strip() == _DONE:
            return
        if self.events == 0 and pending is None and head:
            self.not_a_stream(head)
        cut = ""
        if pending is not None:
            try:
                json.loads(pending)
            except ValueError:
                cut = "; the last event was cut off"
            else:
                yield self.parse(pending)
        raise ModelError(
            f"stream ended before [DONE] after {self.events} events{cut}: "
            "the response is incomplete",
            status=self.status,
            body=truncate(self.redact(pending)) if pending else None,
        )

    def not_a_stream(self, head: bytes) -> None:
        """Raise the server's own error when the "stream" is a JSON error body."""
        text = head.decode("utf-8", "replace")
        try:
            detail = error_detail(json.loads(text))
        except (ValueError, RecursionError):
            return
        if detail:
            raise ModelError(
                f"the server answered with an error instead of a stream: {self.redact(detail)}",
                status=self.status,
                body=truncate(self.redact(text)),
            )


_HEAD = 65536  # bytes kept to explain a stream that has no events


def sse_chunks(
    read: Pull[bytes],
    *,
    status: int | None = None,
    redact: Callable[[str], str] = str,
    idle: float | None = None,
) -> Streamed[ChatResponse, None]:
    """The ``ChatResponse`` chunks of a chat-completions event stream whose raw bytes come
    from ``read`` (the logic, once: ``stream``/``astream`` run it, see
    ``graph_agent._runtime.streams``).

    ``status`` goes into any ``ModelError``; ``redact`` is applied to every text an error
    carries (the model passes one that masks its API key). With ``idle``, bytes that bring
    no event for ``idle`` seconds (a server sending only keep-alive comments) are a
    ``ModelError``; time the reader of the chunks spends does not count. The events
    themselves are never rewritten.
    """
    decoder, chunks, head = SSEDecoder(), _Chunks(status, redact), bytearray()
    waited, mark = 0.0, time.monotonic()
    while (raw := (yield read)) is not END:
        if not chunks.events and len(head) < _HEAD:
            head += raw
        waited += time.monotonic() - mark
        chunks.check_idle(idle, waited)
        for event in decoder.feed(raw):
            if event.strip() == _DONE:
                return
            waited = 0.0
            yield chunks.parse(event)
        mark = time.monotonic()
    yield from chunks.unfinished(decoder.close(), bytes(head))


def iter_chunks(
    data: Iterable[bytes],
    *,
    status: int | None = None,
    redact: Callable[[str], str] = str,
    idle: float | None = None,
) -> Iterator[ChatResponse]:
    """The chunks of an event stream given as an iterable of raw bytes (``sse_chunks`` run
    by the sync driver)."""
    return stream(sse_chunks(Pull.of(data), status=status, redact=redact, idle=idle))
