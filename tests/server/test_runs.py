"""The server's runs: event ids and rejoining, one runner per thread and the multitask
strategies, statuses, and a run answered only once its input is stored."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from graph_agent.server._runs import (
    Entry,
    Run,
    RunLog,
    RunManager,
    RunStatus,
    ThreadBusyError,
    UnknownEventIdError,
)


def run_async(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


async def no_head() -> str | None:
    return "checkpoint-0"


def stepping(
    events: int, gate: asyncio.Event | None = None, status: RunStatus = "success"
) -> Callable[[Run], Awaitable[RunStatus]]:
    """An execute that stores its input (``started``), then writes ``events`` events, waiting
    at ``gate`` (when given) before the last."""

    async def execute(run: Run) -> RunStatus:
        await run.log.append("metadata", {"run_id": run.run_id})
        run.started.set()
        for n in range(events):
            if gate is not None and n == events - 1:
                await gate.wait()
            await run.log.append("values", {"n": n})
        return status

    return execute


async def read(log: RunLog, last_id: str | None = None) -> list[Entry]:
    return [entry async for batch in log.batches(last_id) for entry in batch]


def test_every_event_has_an_id_unique_and_ordered_and_a_rejoin_gets_each_later_one_once() -> None:
    async def scenario() -> tuple[list[str], list[str], list[str]]:
        manager = RunManager()
        gate = asyncio.Event()
        run = await manager.start("t", "a", {}, {}, "reject", stepping(4, gate), no_head)
        first: list[str] = []
        async for batch in run.log.batches():
            first += [entry.id for entry in batch][: 3 - len(first)]
            if first[-1:] == ["3"]:
                break  # the client drops after "3", while the run goes on
        gate.set()
        later = [e.id for e in await read(run.log, "3")]
        everything = [e.id for e in await read(run.log)]
        return first, later, everything

    first, later, everything = run_async(scenario())
    assert first == ["1", "2", "3"]
    assert later == ["4", "5"]  # nothing twice, nothing lost
    assert everything == ["1", "2", "3", "4", "5"]


def test_an_id_the_run_never_sent_is_refused() -> None:
    async def scenario() -> None:
        log = RunLog()
        await log.append("values", {})
        await log.close()
        with pytest.raises(UnknownEventIdError, match="not an id of this run"):
            await read(log, "7")
        with pytest.raises(UnknownEventIdError):
            await read(log, "abc")
        assert [e.id for e in await read(log, "-1")] == ["1"]  # useStream's "from the start"

    run_async(scenario())


def test_a_run_is_answered_once_its_input_is_stored_not_when_it_ends() -> None:
    async def scenario() -> tuple[str, bool, str]:
        manager = RunManager()
        gate = asyncio.Event()
        run = await manager.start("t", "a", {}, {}, "reject", stepping(2, gate), no_head)
        answered = run.status
        stored = run.started.is_set()
        gate.set()
        await manager.join(run)
        return answered, stored, run.status

    assert run_async(scenario()) == ("running", True, "success")


def test_reject_refuses_a_second_run_on_a_busy_thread() -> None:
    async def scenario() -> None:
        manager = RunManager()
        gate = asyncio.Event()
        first = await manager.start("t", "a", {}, {}, "reject", stepping(2, gate), no_head)
        with pytest.raises(ThreadBusyError, match=first.run_id):
            await manager.start("t", "a", {}, {}, "reject", stepping(1), no_head)
        other = await manager.start("u", "a", {}, {}, "reject", stepping(1), no_head)
        await manager.join(other)  # another thread is not busy
        gate.set()
        await manager.join(first)

    run_async(scenario())


def test_enqueue_runs_the_second_after_the_first() -> None:
    async def scenario() -> list[str]:
        manager = RunManager()
        gate = asyncio.Event()
        first = await manager.start("t", "a", {}, {}, "reject", stepping(2, gate), no_head)
        second = await manager.start("t", "a", {}, {}, "enqueue", stepping(1), no_head)
        seen = [second.status]  # waits its turn
        gate.set()
        await manager.join(second)
        seen += [first.status, second.status]
        assert first.done.is_set() and first.updated_at <= second.updated_at
        return seen

    assert run_async(scenario()) == ["pending", "success", "success"]


def test_interrupt_stops_the_running_one_and_rollback_starts_the_thread_again_where_it_began() -> (
    None
):
    async def scenario() -> tuple[str, str, str | None]:
        manager = RunManager()
        first = await manager.start(
            "t", "a", {}, {}, "reject", stepping(2, asyncio.Event()), no_head
        )
        second = await manager.start(
            "t", "a", {}, {}, "interrupt", stepping(2, asyncio.Event()), no_head
        )
        interrupted = first.status
        third = await manager.start("t", "a", {}, {}, "rollback", stepping(1), no_head)
        await manager.join(third)
        return interrupted, second.status, manager.restart_from.get("t")

    interrupted, second, restart = run_async(scenario())
    assert interrupted == "interrupted"
    assert second == "interrupted"
    assert restart == "checkpoint-0"  # where the rolled-back run began


def test_a_failing_run_ends_in_error_with_an_error_event_and_a_closed_log() -> None:
    async def failing(run: Run) -> RunStatus:
        run.started.set()
        raise RuntimeError("model down")

    async def scenario() -> tuple[str, str | None, list[Entry]]:
        manager = RunManager()
        run = await manager.start("t", "a", {}, {}, "reject", failing, no_head)
        await manager.join(run)
        return run.status, run.error, await read(run.log)

    status, error, entries = run_async(scenario())
    assert status == "error" and error == "RuntimeError: model down"
    assert [(e.event, e.data["message"]) for e in entries] == [("error", "model down")]


def test_a_cancelled_run_is_interrupted_and_its_log_ends() -> None:
    async def scenario() -> tuple[str, list[str]]:
        manager = RunManager()
        run = await manager.start("t", "a", {}, {}, "reject", stepping(3, asyncio.Event()), no_head)
        await manager.cancel(run)
        return run.status, [e.event for e in await read(run.log)]

    status, events = run_async(scenario())
    assert status == "interrupted"
    assert events == ["metadata", "values", "values"]


def test_a_failure_the_run_reported_itself_is_not_reported_twice() -> None:
    async def failing(run: Run) -> RunStatus:
        run.started.set()
        await run.log.append("error", {"error": "ModelError", "message": "down"})
        run.error_reported = True
        raise RuntimeError("down")

    async def scenario() -> list[str]:
        manager = RunManager()
        run = await manager.start("t", "a", {}, {}, "reject", failing, no_head)
        await manager.join(run)
        assert run.status == "error"
        return [e.event for e in await read(run.log)]

    assert run_async(scenario()) == ["error"]
