"""A run's log: what happened in the run, in order, as the run's own objects (no protocol in
it: a protocol's adapter encodes it when it reads). Every entry has an id (``"1"``, ``"2"``,
...), unique and ordered within the run, and a kind:

- ``ATTEMPT``: the run (or its taking up again) begins; data: its attempt number;
- ``BEFORE``: the thread's state before the run, for a run that goes on from a checkpoint
  (an answer to an interrupt, a run taken up again); data: a ``StateSnapshot``;
- ``EVENT``: one of the run's events (``graph_agent.events``);
- ``STATE``: the thread's state once a step is stored; data: a ``StateSnapshot``;
- ``FAILURE``: the run failed; data: the error.

A reader reads it from any position, while the run goes on or after it ended."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Final

__all__ = ["ATTEMPT", "BEFORE", "EVENT", "FAILURE", "STATE", "Entry", "RunLog"]

ATTEMPT: Final = "attempt"
BEFORE: Final = "before"
EVENT: Final = "event"
STATE: Final = "state"
FAILURE: Final = "failure"


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    """One entry of a run's log: ``id`` (its position, from ``"1"``), its kind (``EVENT``,
    ``STATE``, ...) and its data."""

    id: str
    kind: str
    data: Any


# Where a log's entries are kept beyond the process: called with the entries not yet kept.
Sink = Callable[[Sequence[Entry]], Awaitable[None]]


class RunLog:
    """A run's entries, kept for the run's life and after it (for late joiners). With a
    ``sink``, entries are handed to it in batches (every ``batch`` entries, on ``flush`` and
    at ``close``), so a restarted process reads what the run had sent. With ``background``,
    each entry is handed on as it comes, without the run waiting for it: those appended
    while the sink is busy go together next (a remote sink's round trips do not slow the
    run); a failure of the sink is raised by the next ``append``, ``flush`` or ``close``."""

    def __init__(
        self,
        entries: Sequence[Entry] = (),
        *,
        sink: Sink | None = None,
        batch: int = 64,
        background: bool = False,
    ) -> None:
        self.entries: list[Entry] = list(entries)
        self.closed = False
        self._kept = len(self.entries)  # how many the sink has
        self._sink = sink
        self._batch = batch
        self._background = background
        self._handing: asyncio.Task[None] | None = None  # the background hand-off
        self._wake = asyncio.Event()  # set (and replaced) at each change

    def _changed(self) -> None:
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()

    async def append(self, kind: str, data: Any) -> Entry:
        entry = Entry(str(len(self.entries) + 1), kind, data)
        self.entries.append(entry)
        self._changed()
        if self._sink is None:
            return entry
        if self._background:
            self._hand_on()
        elif len(self.entries) - self._kept >= self._batch:
            await self.flush()
        return entry

    def _hand_on(self) -> None:
        """Start handing the new entries to the sink, unless that is under way (it hands
        on what came meanwhile when it is done); a hand-off that failed is raised here."""
        handing = self._handing
        if handing is not None and handing.done():
            self._handing = None
            handing.result()  # its failure, once
        if self._handing is None:
            self._handing = asyncio.ensure_future(self._hand_all())

    async def _hand_all(self) -> None:
        assert self._sink is not None
        while self._kept < len(self.entries):
            fresh = self.entries[self._kept :]
            self._kept = len(self.entries)
            await self._sink(fresh)

    async def flush(self) -> None:
        """Hand the entries the sink does not have yet to it (and wait until it has them)."""
        if self._sink is None:
            return
        if self._background:
            self._hand_on()
            handing = self._handing
            if handing is not None:  # one hand-off at a time: entries stay in order
                try:
                    await asyncio.shield(handing)  # a cancelled run still hands them on
                finally:
                    if handing.done() and self._handing is handing:
                        self._handing = None
            return
        if self._kept == len(self.entries):
            return
        fresh = self.entries[self._kept :]
        self._kept = len(self.entries)
        await self._sink(fresh)

    async def close(self) -> None:
        self.closed = True
        self._changed()
        await self.flush()

    async def batches(
        self, after: int = 0, *, idle: float | None = None
    ) -> AsyncIterator[list[Entry]]:
        """Every entry after the first ``after``, as they come, in lists of those there at
        once (a reader writes each list in one go), until the run's log closes; with
        ``idle``, an empty list each ``idle`` seconds without an entry."""
        position = after
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
