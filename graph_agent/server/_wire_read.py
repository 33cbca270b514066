"""A run's log read as the Agent Protocol's stream: the log holds the run's own objects (see
``graph_agent.runs._log``), and each reader encodes them into stream parts as it reads, in
the stream modes the run was asked for (``RunStreamEncoder``), or in those the reader asks
for (a join with ``stream_mode``: the log holds every event whatever the run streamed).

A part's id is its place in the run's stream (``"1"``, ``"2"``, ...): encoding is
deterministic, so every reader numbers the parts alike, and one who reconnects with
``Last-Event-ID`` gets every later part exactly once, whichever server it reconnects to.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable
from typing import Any, NamedTuple

from ..runs import ATTEMPT, BEFORE, EVENT, FAILURE, STATE, Entry, Run, RunLog, UnknownEventIdError
from ._wire_encoder import Chunk, RunStreamEncoder, snapshots_needed
from ._wire_stream import STREAM_MODES, parse_stream_modes

__all__ = [
    "LogReader",
    "WireEntry",
    "check_last_event_id",
    "reader_modes",
    "run_modes",
    "wire_batches",
]


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


def run_modes(run: Run) -> list[str]:
    """The stream modes ``run`` was asked for (none, ``[]``, for a waited run)."""
    asked = run.kwargs.get("stream_mode")
    if asked == []:
        return []
    try:
        return parse_stream_modes(asked)
    except ValueError:  # refused when the run was asked for: not in a kept run
        return ["values"]


def reader_modes(run: Run, asked: list[str] | None) -> list[str]:
    """The modes a reader of ``run`` gets: those it ``asked`` for (``None``: the run's own).
    ``ValueError`` when they show the thread's state and the run's own did not (its log
    holds no state for them), saying which modes it can have."""
    own = run_modes(run)
    if asked is None:
        return own
    if snapshots_needed(asked) and not snapshots_needed(own):
        shown = sorted(m for m in asked if snapshots_needed([m]))
        any_run = sorted(m for m in STREAM_MODES if not snapshots_needed([m]))
        raise ValueError(
            f"run {run.run_id!r} kept no state of its thread (its stream modes, {own}, show "
            f"none), so it cannot be read in {shown}; join it in {any_run}, which read any run"
        )
    return asked


class LogReader:
    """Encodes one run's log entries, in order, into numbered stream parts, in ``modes``
    (``None``: the modes the run was asked for), with its subgraphs' parts when
    ``subgraphs`` (``None``: as the run was asked for)."""

    def __init__(
        self, run: Run, modes: list[str] | None = None, subgraphs: bool | None = None
    ) -> None:
        self.run = run
        self.modes = run_modes(run) if modes is None else modes
        own = bool(run.kwargs.get("stream_subgraphs"))
        self.subgraphs = own if subgraphs is None else subgraphs
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


def check_last_event_id(
    run: Run, last_id: str | None, modes: list[str] | None = None, subgraphs: bool | None = None
) -> int:
    """How many parts a reader (in ``modes``, ``subgraphs``) who last saw ``last_id`` has seen;
    ``UnknownEventIdError`` for an id the run has not sent (known when this process holds
    the run's log)."""
    seen = position_after(last_id)
    if seen and isinstance(run.log, RunLog):
        sent = LogReader(run, modes, subgraphs).read(list(run.log.entries))
        if seen > len(sent):
            raise UnknownEventIdError(
                f"Last-Event-ID {last_id!r} is not an id of this run (it has sent "
                f"{len(sent)} events)"
            )
    return seen


async def wire_batches(
    run: Run,
    seen: int = 0,
    *,
    idle: float | None = None,
    modes: list[str] | None = None,
    subgraphs: bool | None = None,
) -> AsyncIterator[list[WireEntry]]:
    """The run's stream parts (in ``modes`` and ``subgraphs``; ``None``: the run's own) after
    the first
    ``seen``, as its log grows, in lists of those there at once, until the log ends; with
    ``idle``, an empty list each ``idle`` seconds without a part."""
    reader = LogReader(run, modes, subgraphs)
    quiet_since = time.monotonic()
    async for batch in run.log.batches(0, idle=idle):
        fresh = [part for part in reader.read(batch) if int(part.id) > seen]
        if fresh:
            quiet_since = time.monotonic()
            yield fresh
        elif idle is not None and time.monotonic() - quiet_since >= idle:
            quiet_since = time.monotonic()
            yield []
