"""Streaming logic written once (graph_agent._runtime.streams): one generator that asks for
each piece (``Pull``) and yields what it makes, run by a sync and an async driver."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import pytest

from checkpoint.effects import Effect, Steps, aperform, perform
from graph_agent._runtime.streams import END, Pull, Streamed, astream, stream

SECRET = "piece-the-traceback-must-not-show"


async def pieces_of(items: list[Any]) -> AsyncIterator[Any]:
    for item in items:
        await asyncio.sleep(0)
        yield item


class Note(Effect):
    """An effect that notes ``what`` in ``log``, in either run (a cleanup, a close)."""

    __slots__ = ("log", "what")

    def __init__(self, log: list[str], what: str) -> None:
        self.log, self.what = log, what

    def run(self, context: Any) -> None:
        self.log.append(f"sync {self.what}")

    def arun(self, context: Any) -> Awaitable[None]:
        return self._arun()

    async def _arun(self) -> None:
        await asyncio.sleep(0)
        self.log.append(f"async {self.what}")


def doubled(read: Pull[int], log: list[str]) -> Streamed[int, None]:
    """The logic, once: each piece twice; the cleanup is an effect too."""
    try:
        while (piece := (yield read)) is not END:
            yield piece
            yield piece
    finally:
        yield Note(log, "cleanup")


def both_ways(items: list[int]) -> Pull[int]:
    return Pull(lambda: iter(items), lambda: pieces_of(items))


def read_all_sync(items: list[int]) -> tuple[list[int], list[str]]:
    log: list[str] = []
    return list(stream(doubled(both_ways(items), log))), log


def read_all_async(items: list[int]) -> tuple[list[int], list[str]]:
    async def main() -> tuple[list[int], list[str]]:
        log: list[str] = []
        return [piece async for piece in astream(doubled(both_ways(items), log))], log

    return asyncio.run(main())


def test_one_logic_gives_the_same_pieces_in_both_runs() -> None:
    assert read_all_sync([1, 2, 3]) == ([1, 1, 2, 2, 3, 3], ["sync cleanup"])
    assert read_all_async([1, 2, 3]) == ([1, 1, 2, 2, 3, 3], ["async cleanup"])
    assert read_all_sync([]) == ([], ["sync cleanup"])


def test_a_reader_who_leaves_early_still_has_the_logic_clean_up() -> None:
    log: list[str] = []
    pieces = stream(doubled(both_ways([1, 2, 3]), log))
    assert next(pieces) == 1
    pieces.close()
    assert log == ["sync cleanup"]

    async def main() -> list[str]:
        log: list[str] = []
        pieces = astream(doubled(both_ways([1, 2, 3]), log))
        assert await anext(pieces) == 1
        await pieces.aclose()
        return log

    assert asyncio.run(main()) == ["async cleanup"]


def test_a_cancelled_read_is_thrown_into_the_logic_which_cleans_up() -> None:
    async def main() -> list[str]:
        log: list[str] = []
        never = asyncio.Event()

        async def stalled() -> AsyncIterator[int]:
            yield 1
            await never.wait()
            yield 2

        read: Pull[int] = Pull(None, stalled)

        async def consume() -> None:
            async for _ in astream(doubled(read, log)):
                log.append("piece")

        task = asyncio.create_task(consume())
        while log.count("piece") < 2:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return log

    assert asyncio.run(main()) == ["piece", "piece", "async cleanup"]


def test_a_stream_error_is_thrown_into_the_logic_at_its_read() -> None:
    def broken() -> Any:
        yield 1
        raise ConnectionError("lost")

    async def abroken() -> AsyncIterator[int]:
        yield 1
        raise ConnectionError("lost")

    def logic(read: Pull[int]) -> Streamed[str, None]:
        try:
            while (piece := (yield read)) is not END:
                yield f"got {piece}"
        except ConnectionError as error:
            yield f"then {error}"

    assert list(stream(logic(Pull(broken)))) == ["got 1", "then lost"]

    async def main() -> list[str]:
        return [text async for text in astream(logic(Pull(None, abroken)))]

    assert asyncio.run(main()) == ["got 1", "then lost"]


def test_pieces_at_hand_read_alike_in_both_runs_and_perform_folds_them() -> None:
    def total(read: Pull[int]) -> Steps[int]:
        sum_ = 0
        while (piece := (yield read)) is not END:
            sum_ += piece
        return sum_

    assert perform(total(Pull.of([1, 2, 3]))) == 6
    assert asyncio.run(aperform(total(Pull.of([1, 2, 3])))) == 6
    assert asyncio.run(aperform(total(Pull(None, lambda: pieces_of([4, 5]))))) == 9


def test_an_async_only_stream_in_a_sync_run_says_so() -> None:
    with pytest.raises(NotImplementedError, match="no sync stream"):
        list(stream(doubled(Pull(None, lambda: pieces_of([1])), [])))


def test_a_failure_leaves_no_driver_frame_holding_a_piece() -> None:
    """A traceback printed with its locals shows nothing the stream brought."""

    def logic(read: Pull[str]) -> Streamed[str, None]:
        while (piece := (yield read)) is not END:
            yield "ok"
            if piece == SECRET:
                piece = ""  # the logic clears its own frame, the driver its own
                raise ValueError("a bad piece")

    def frames_showing(error: BaseException) -> list[str]:
        found, tb = [], error.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            found += [f"{frame.f_code.co_name}: {name}" for name, value in frame.f_locals.items() if SECRET in repr(value)]  # fmt: skip
            tb = tb.tb_next
        return found

    with pytest.raises(ValueError) as caught:
        list(stream(logic(Pull.of(["fine", SECRET]))))
    assert frames_showing(caught.value) == []

    async def main() -> BaseException:
        with pytest.raises(ValueError) as caught:
            [text async for text in astream(logic(Pull(None, lambda: pieces_of(["a", SECRET]))))]
        return caught.value

    assert frames_showing(asyncio.run(main())) == []
    assert repr(Pull.of([SECRET])) == "Pull()"
