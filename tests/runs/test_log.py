"""A run's log handing its entries to a store (``RunLog``'s sink): in batches, or, for a
worker writing to Redis, in the background, so the run never waits for a round trip; in
order, each entry once, and a store's failure reaches the run."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from graph_agent.runs import EVENT, Entry, RunLog


class SlowSink:
    """A store whose every write takes a while (a remote one), recording what it got."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.writes: list[list[str]] = []
        self.fail_at = fail_at
        self.gate = asyncio.Event()

    async def __call__(self, entries: Sequence[Entry]) -> None:
        await self.gate.wait()
        self.writes.append([e.id for e in entries])
        if self.fail_at is not None and len(self.writes) == self.fail_at:
            raise ConnectionError("the store went away")


def test_in_the_background_a_run_appends_without_waiting_and_entries_go_in_order() -> None:
    async def main() -> None:
        sink = SlowSink()
        log = RunLog(sink=sink, background=True)
        for n in range(5):  # the sink holds every write: none of these waits for it
            await asyncio.wait_for(log.append(EVENT, n), 1)
        sink.gate.set()
        await log.flush()
        assert [i for write in sink.writes for i in write] == ["1", "2", "3", "4", "5"]
        assert sink.writes[0] == ["1"] and len(sink.writes) == 2  # the rest went together
        await log.append(EVENT, 5)
        await log.close()
        assert sink.writes[-1] == ["6"]

    asyncio.run(main())


def test_a_failed_hand_off_is_raised_to_the_run() -> None:
    async def main() -> None:
        sink = SlowSink(fail_at=1)
        sink.gate.set()
        log = RunLog(sink=sink, background=True)
        await log.append(EVENT, 0)
        with pytest.raises(ConnectionError, match="went away"):
            await log.flush()

    asyncio.run(main())


def test_in_batches_entries_go_every_batch_and_on_flush() -> None:
    async def main() -> None:
        sink = SlowSink()
        sink.gate.set()
        log = RunLog(sink=sink, batch=2)
        for n in range(3):
            await log.append(EVENT, n)
        assert sink.writes == [["1", "2"]]
        await log.flush()
        assert sink.writes == [["1", "2"], ["3"]]

    asyncio.run(main())
