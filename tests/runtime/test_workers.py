"""The worker threads that run an async run's sync calls (graph_agent/_runtime/workers.py)."""

from __future__ import annotations

import asyncio
import contextvars
import multiprocessing
import threading
import time

import pytest

from graph_agent._runtime.workers import (
    WORKERS,
    FinishedAfterCancel,
    in_thread,
    start_in_worker,
    to_worker,
)

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")


def test_a_call_runs_off_the_loop_thread_with_the_callers_context() -> None:
    def where() -> tuple[str, str]:
        return threading.current_thread().name, request_id.get()

    async def main() -> tuple[str, str]:
        request_id.set("r-1")
        return await to_worker(where)  # type: ignore[no-any-return]

    name, seen = asyncio.run(main())
    assert name.startswith("graph-agent-async_")
    assert seen == "r-1"


def test_a_context_change_in_the_worker_does_not_reach_the_caller() -> None:
    def change() -> None:
        request_id.set("changed")

    async def main() -> str:
        request_id.set("mine")
        await to_worker(change)
        return request_id.get()

    assert asyncio.run(main()) == "mine"


def test_errors_reach_the_awaiting_code() -> None:
    def fail(kind: type[BaseException]) -> None:
        raise kind("from the worker")

    async def main() -> None:
        for kind in (ValueError, KeyboardInterrupt):
            with pytest.raises(kind, match="from the worker"):
                await to_worker(fail, kind)
        # a future refuses StopIteration (asyncio.to_thread then never returns); here it
        # surfaces as a coroutine's StopIteration does
        with pytest.raises(RuntimeError) as caught:
            await to_worker(fail, StopIteration)
        assert isinstance(caught.value.__cause__, StopIteration)

    asyncio.run(main())


def test_many_calls_at_once_use_at_most_WORKERS_threads_and_all_finish() -> None:
    running, most = [0], [0]
    lock = threading.Lock()

    def work(i: int) -> int:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.002)
        with lock:
            running[0] -= 1
        return i * 2

    async def main() -> list[int]:
        return list(await asyncio.gather(*(to_worker(work, i) for i in range(200))))

    assert asyncio.run(main()) == [i * 2 for i in range(200)]
    assert 1 < most[0] <= WORKERS
    workers = [t for t in threading.enumerate() if t.name.startswith("graph-agent-async_")]
    assert len(workers) <= WORKERS


def test_a_cancelled_wait_for_a_sync_tool_keeps_what_the_thread_returned() -> None:
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(5)
        return "charged once"

    async def main() -> FinishedAfterCancel:
        task = asyncio.ensure_future(in_thread(slow))
        while not started.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        await asyncio.sleep(0.01)
        assert not task.done()  # it waits for the thread, which cannot be stopped
        release.set()
        with pytest.raises(FinishedAfterCancel) as caught:
            await task
        return caught.value

    finished = asyncio.run(main())
    assert finished.result == "charged once" and finished.error is None


def test_a_cancelled_wait_keeps_the_error_the_thread_raised() -> None:
    started, release = threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        release.wait(5)
        raise ValueError("declined")

    async def main() -> FinishedAfterCancel:
        task = asyncio.ensure_future(in_thread(slow))
        while not started.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        await asyncio.sleep(0)
        release.set()
        with pytest.raises(FinishedAfterCancel) as caught:
            await task
        return caught.value

    finished = asyncio.run(main())
    assert isinstance(finished.error, ValueError)


def test_cancelled_twice_it_stops_waiting() -> None:
    started, release = threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        release.wait(5)

    async def main() -> None:
        task = asyncio.ensure_future(in_thread(slow))
        while not started.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError) as caught:
            await task
        assert not isinstance(caught.value, FinishedAfterCancel)

    try:
        asyncio.run(main())
    finally:
        release.set()


def test_calls_that_finish_while_the_loop_is_busy_each_get_their_own_outcome() -> None:
    n = 12
    finished = threading.Semaphore(0)

    def work(i: int) -> int:
        try:
            if i % 3 == 0:
                raise ValueError(f"call {i}")
            return i * 10
        finally:
            finished.release()

    async def main() -> list[object]:
        calls = [start_in_worker(work, i) for i in range(n)]
        for _ in range(n):  # the loop is held until every call has finished
            assert finished.acquire(timeout=5)
        outcomes: list[object] = []
        for call in calls:
            await call.waiter
            try:
                outcomes.append(call.outcome())
            except ValueError as error:
                outcomes.append(error)
        return outcomes

    outcomes = asyncio.run(main())
    for i, outcome in enumerate(outcomes):
        if i % 3 == 0:
            assert isinstance(outcome, ValueError) and str(outcome) == f"call {i}"
        else:
            assert outcome == i * 10


def test_a_call_that_outlives_its_loop_is_dropped_quietly() -> None:
    release, done = threading.Event(), threading.Event()

    def slow() -> None:
        release.wait(5)
        done.set()

    async def main() -> None:
        start_in_worker(slow)

    asyncio.run(main())  # the loop closes with the call still running
    release.set()
    assert done.wait(5)
    assert asyncio.run(to_worker(lambda: "still serving")) == "still serving"


def _in_child(queue: multiprocessing.Queue[str]) -> None:
    queue.put(asyncio.run(to_worker(lambda: "served in the child")))


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork (POSIX)"
)
def test_a_forked_child_gets_threads_of_its_own() -> None:
    asyncio.run(to_worker(lambda: None))  # the parent has started its workers
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[str] = context.Queue()
    child = context.Process(target=_in_child, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=20) == "served in the child"
    finally:
        child.join(20)
    assert child.exitcode == 0
