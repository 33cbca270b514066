"""A run's log read as the Agent Protocol's stream: the log holds the run's own objects (see
``graph_agent.runs._log``), and each reader encodes them into stream parts as it reads, in
the stream modes the run was asked for (``RunStreamEncoder``).

A part's id is its place in the run's stream (``"1"``, ``"2"``, ...): encoding is
deterministic, so every reader numbers the parts alike, and one who reconnects with
``Last-Event-ID`` gets every later part exactly once, whichever server it reconnects to.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable
from typing import Any, NamedTuple

from ..runs import ATTEMPT, BEFORE, EVENT, FAILURE, STATE, Entry, Run, RunLog, UnknownEventIdError
from ._wire_encoder import Chunk, RunStreamEncoder
from ._wire_stream import parse_stream_modes

__all__ = ["LogReader", "WireEntry", "check_last_event_id", "wire_batches"]


class WireEntry(NamedTuple):
    """One stream part as ``sse_response`` writes it: its id, event name and data."""

    id: str
    event: str
    data: Any


def position_after(last_id: str | None) -> int:
    """How many parts a reader who last saw ``last_id`` has seen: ``None``, or ``"-1"`` as
    ``useStream`` sends it, is none. ``UnknownEventIdError`` for an id that is not one."""
    if not last_id or last_id == "-1":
        return 0
    try:
        seen = int(last_id)
    except ValueError:
        raise UnknownEventIdError(f"Last-Event-ID {last_id!r} is not an id of this run") from None
    if seen < 0:
        raise UnknownEventIdError(f"Last-Event-ID {last_id!r} is not an id of this run")
    return seen


class LogReader:
    """Encodes one run's log entries, in order, into numbered stream parts."""

    def __init__(self, run: Run) -> None:
        self.run = run
        try:
            self.modes = parse_stream_modes(run.kwargs.get("stream_mode"))
        except ValueError:  # refused when the run was asked for: not in a kept run
            self.modes = ["values"]
        self.subgraphs = bool(run.kwargs.get("stream_subgraphs"))
        self.count = 0
        self._encoder: RunStreamEncoder | None = None

    def _new_encoder(self, attempt: int) -> RunStreamEncoder:
        self._encoder = RunStreamEncoder(
            modes=self.modes,
            thread_id=self.run.thread_id,
            run_id=self.run.run_id,
            subgraphs=self.subgraphs,
            attempt=attempt,
        )
        return self._encoder

    def _parts(self, entry: Entry) -> list[Chunk]:
        if entry.kind == ATTEMPT:  # each attempt's stream begins anew, with its metadata
            return self._new_encoder(int(entry.data)).start()
        encoder = self._encoder or self._new_encoder(self.run.attempt)
        if entry.kind == EVENT:
            return encoder.event(entry.data)
        if entry.kind == STATE:
            return encoder.checkpoint(entry.data)
        if entry.kind == BEFORE:
            return encoder.resume(entry.data)
        if entry.kind == FAILURE:
            return encoder.error(entry.data)
        return []  # a kind a later version writes

    def read(self, entries: Iterable[Entry]) -> list[WireEntry]:
        """The parts ``entries`` (the next ones of the log) give, numbered on."""
        parts = []
        for entry in entries:
            for event, data in self._parts(entry):
                self.count += 1
                parts.append(WireEntry(str(self.count), event, data))
        return parts


def check_last_event_id(run: Run, last_id: str | None) -> int:
    """How many parts a reader who last saw ``last_id`` has seen; ``UnknownEventIdError``
    for an id the run has not sent (known when this process holds the run's log)."""
    seen = position_after(last_id)
    if seen and isinstance(run.log, RunLog):
        sent = LogReader(run).read(list(run.log.entries))
        if seen > len(sent):
            raise UnknownEventIdError(
                f"Last-Event-ID {last_id!r} is not an id of this run (it has sent "
                f"{len(sent)} events)"
            )
    return seen


async def wire_batches(
    run: Run, seen: int = 0, *, idle: float | None = None
) -> AsyncIterator[list[WireEntry]]:
    """The run's stream parts after the first ``seen``, as its log grows, in lists of those
    there at once, until the log ends; with ``idle``, an empty list each ``idle`` seconds
    without a part."""
    reader = LogReader(run)
    quiet_since = time.monotonic()
    async for batch in run.log.batches(0, idle=idle):
        fresh = [part for part in reader.read(batch) if int(part.id) > seen]
        if fresh:
            quiet_since = time.monotonic()
            yield fresh
        elif idle is not None and time.monotonic() - quiet_since >= idle:
            quiet_since = time.monotonic()
            yield []
