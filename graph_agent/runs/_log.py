"""A run's event log: every event has an id (``"1"``, ``"2"``, ...), unique and ordered within
the run; a reader who reconnects with ``Last-Event-ID`` gets every later event exactly once,
while the run goes on or after it ended."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from .errors import UnknownEventIdError

__all__ = ["Entry", "RunLog", "position_after"]


def position_after(last_id: str | None, sent: int | None = None) -> int:
    """Where a reader who last saw ``last_id`` goes on in a run's log: ``None``, or ``"-1"``
    as ``useStream`` sends it, is from the start. ``UnknownEventIdError`` for an id that is
    not one, or past the ``sent`` events (when known)."""
    if not last_id or last_id == "-1":
        return 0
    try:
        seen = int(last_id)
    except ValueError:
        raise UnknownEventIdError(f"Last-Event-ID {last_id!r} is not an id of this run") from None
    if seen < 0 or (sent is not None and seen > sent):
        said = "" if sent is None else f" (it has sent {sent} events)"
        raise UnknownEventIdError(f"Last-Event-ID {last_id!r} is not an id of this run{said}")
    return seen


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """One event of a run's stream: ``id`` (its position, from ``"1"``), the event's name
    and its JSON-ready data."""

    id: str
    event: str
    data: Any


# Where a log's entries are kept beyond the process: called with the entries not yet kept.
Sink = Callable[[Sequence[Entry]], Awaitable[None]]


class RunLog:
    """A run's events, kept for the run's life and after it (for late joiners). With a
    ``sink``, entries are handed to it in batches (every ``batch`` entries, on ``flush`` and
    at ``close``), so a restarted process reads what the run had sent."""

    def __init__(
        self, entries: Sequence[Entry] = (), *, sink: Sink | None = None, batch: int = 64
    ) -> None:
        self.entries: list[Entry] = list(entries)
        self.closed = False
        self._kept = len(self.entries)  # how many the sink has
        self._sink = sink
        self._batch = batch
        self._wake = asyncio.Event()  # set (and replaced) at each change

    def _changed(self) -> None:
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()

    async def append(self, event: str, data: Any) -> Entry:
        entry = Entry(str(len(self.entries) + 1), event, data)
        self.entries.append(entry)
        self._changed()
        if self._sink is not None and len(self.entries) - self._kept >= self._batch:
            await self.flush()
        return entry

    async def flush(self) -> None:
        """Hand the entries the sink does not have yet to it."""
        if self._sink is None or self._kept == len(self.entries):
            return
        fresh = self.entries[self._kept :]
        self._kept = len(self.entries)
        await self._sink(fresh)

    async def close(self) -> None:
        self.closed = True
        self._changed()
        await self.flush()

    def position_after(self, last_id: str | None) -> int:
        """Where a reader who last saw ``last_id`` goes on (see ``position_after``)."""
        return position_after(last_id, len(self.entries))

    async def batches(
        self, last_id: str | None = None, *, idle: float | None = None
    ) -> AsyncIterator[list[Entry]]:
        """Every event after ``last_id``, as they come, in lists of those there at once (a
        reader writes each list in one go), until the run's log closes; with ``idle``, an
        empty list each ``idle`` seconds without an event."""
        position = self.position_after(last_id)
        while True:
            if position < len(self.entries):
                fresh = self.entries[position:]
                position += len(fresh)
                yield fresh
                continue
            if self.closed:
                return
            if idle is None:
                await self._wake.wait()
                continue
            try:
                await asyncio.wait_for(self._wake.wait(), idle)
            except asyncio.TimeoutError:
                yield []
