"""One suite for every run store (in memory, SQLite, Redis on fakeredis, on a real server and
on a 3-node cluster): what a restarted or second server reads back is what was kept."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

from graph_agent import AssistantMessage, UserMessage
from graph_agent import events as ev
from graph_agent.graph import Interrupt, StateSnapshot
from graph_agent.runs import (
    ATTEMPT,
    BEFORE,
    EVENT,
    FAILURE,
    STATE,
    Entry,
    MemoryRunStore,
    RedisRunStore,
    Run,
    RunStore,
    SqliteRunStore,
    ThreadRecord,
    now,
)

T = TypeVar("T")
Make = Callable[[], Awaitable[RunStore]]


def _redis_fake() -> RunStore:
    import fakeredis

    return RedisRunStore(fakeredis.FakeAsyncRedis(), prefix=f"t-{uuid.uuid4().hex[:8]}")


def make_store(kind: str, request: pytest.FixtureRequest) -> RunStore:
    if kind == "memory":
        return MemoryRunStore()
    if kind == "sqlite":
        path: Path = request.getfixturevalue("tmp_path") / "runs.sqlite"
        return SqliteRunStore(path)
    if kind == "redis-fake":
        return _redis_fake()
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    if kind == "redis-real":
        return RedisRunStore.from_url(request.getfixturevalue("redis_url"), prefix=prefix)
    url = request.getfixturevalue("cluster_url")
    return RedisRunStore.from_url(url, prefix=prefix, cluster=True)


KINDS = ["memory", "sqlite", "redis-fake", "redis-real", "redis-cluster"]


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def on_store(
    kind: str, request: pytest.FixtureRequest, work: Callable[[RunStore], Awaitable[T]]
) -> T:
    async def main() -> T:
        store = make_store(kind, request)
        try:
            return await work(store)
        finally:
            await store.aclose()

    return asyncio.run(main())


def a_run(thread_id: str, **fields: Any) -> Run:
    return Run(
        run_id=str(uuid.uuid4()),
        thread_id=thread_id,
        assistant_id="agent",
        multitask_strategy="enqueue",
        kwargs={"input": {"messages": [{"role": "user", "content": "hi"}]}},
        metadata={"from": "test"},
        **fields,
    )


def test_a_thread_record_reads_back_as_kept(kind: str, request: pytest.FixtureRequest) -> None:
    async def work(store: RunStore) -> None:
        created = now()
        record = ThreadRecord(
            "t1", created, created + timedelta(seconds=1), {"user": "u1"}, "agent"
        )
        record.children.add("t1|sub:1")
        await store.put_thread(record)
        record.metadata["user"] = "changed after put"  # what is kept does not change
        back = await store.get_thread("t1")
        assert back is not None
        assert (back.thread_id, back.graph_id, back.metadata) == ("t1", "agent", {"user": "u1"})
        assert (back.created_at, back.updated_at) == (created, created + timedelta(seconds=1))
        assert back.children == {"t1|sub:1"}
        assert await store.get_thread("absent") is None
        await store.put_thread(ThreadRecord("t2", created, created, {}, None))
        assert sorted(r.thread_id for r in await store.list_threads()) == ["t1", "t2"]

    on_store(kind, request, work)


def test_runs_read_back_newest_first_and_active_ones_oldest_first(
    kind: str, request: pytest.FixtureRequest
) -> None:
    async def work(store: RunStore) -> None:
        first, second = a_run("t1", created_at=1.0), a_run("t1", created_at=2.0)
        other = a_run("t2", created_at=3.0)
        for run in (first, second, other):
            await store.put_run(run)
        second.mark("running")
        second.started_at_checkpoint = "cp-1"
        await store.put_run(second)
        first.mark("success")
        first.output = a_state(AssistantMessage("hello"))
        await store.put_run(first)
        runs = await store.thread_runs("t1")
        assert [r.run_id for r in runs] == [second.run_id, first.run_id]
        back = await store.get_run(second.run_id)
        assert back is not None and back.started_at_checkpoint == "cp-1"
        assert back.status == "running"
        assert back.output is None  # kept before it ended
        answered = await store.get_run(first.run_id)
        assert answered is not None and answered.output == first.output
        active = await store.active_runs()
        assert [r.run_id for r in active] == [second.run_id, other.run_id]
        assert await store.get_run("absent") is None

    on_store(kind, request, work)


def a_state(*messages: Any) -> StateSnapshot:
    return StateSnapshot(
        values={"messages": [UserMessage("hi é"), *messages]},
        next=(),
        checkpoint_id="cp-2",
        parent_id="cp-1",
        created_at=now(),
        metadata={"step": 1},
        interrupts=(Interrupt(id="i-1", node="ask", when="during", value={"q": "sure?"}),),
        thread_id="t1",
        step=1,
    )


def test_a_run_log_reads_back_in_order_as_the_runs_own_objects(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """What a restarted or another server reads of a run is what the run wrote, no
    protocol's words: its events, the thread's state, its failure (an error by its class
    name and message)."""

    async def work(store: RunStore) -> None:
        run = a_run("t1")
        await store.put_run(run)
        ids = {"run_id": run.run_id, "thread_id": "t1", "node": "model", "task_id": "k1"}
        entries = [
            Entry("1", ATTEMPT, 1),
            Entry("2", BEFORE, a_state()),
            Entry("3", EVENT, ev.ModelDelta(**ids, model="m", text="hel")),
            Entry("4", EVENT, ev.ModelEnd(**ids, model="m", message=AssistantMessage("hello"))),
            Entry("5", STATE, a_state(AssistantMessage("hello"))),
        ]
        await store.append_events(run.run_id, entries[:2])
        await store.append_events(run.run_id, entries[2:])
        failed = Entry("6", FAILURE, ValueError("no such city"))
        await store.append_events(run.run_id, [failed])
        back = await store.events(run.run_id)
        assert back[:5] == entries
        assert [e.id for e in back] == ["1", "2", "3", "4", "5", "6"]
        assert (type(back[5].data).__name__, str(back[5].data)) == ("ValueError", "no such city")
        assert await store.events("absent") == []

    on_store(kind, request, work)


def test_deleting_a_thread_forgets_its_runs_and_their_events(
    kind: str, request: pytest.FixtureRequest
) -> None:
    async def work(store: RunStore) -> None:
        created = now()
        await store.put_thread(ThreadRecord("t1", created, created, {}, "agent"))
        await store.put_thread(ThreadRecord("t2", created, created, {}, "agent"))
        gone, kept = a_run("t1"), a_run("t2")
        for run in (gone, kept):
            await store.put_run(run)
            await store.append_events(run.run_id, [Entry("1", ATTEMPT, 1)])
        await store.delete_thread("t1")
        assert await store.get_thread("t1") is None
        assert await store.get_run(gone.run_id) is None
        assert await store.events(gone.run_id) == []
        assert await store.thread_runs("t1") == []
        assert [r.run_id for r in await store.active_runs()] == [kept.run_id]
        assert len(await store.events(kept.run_id)) == 1
        await store.delete_run(kept.run_id)
        assert await store.thread_runs("t2") == []
        assert await store.active_runs() == []

    on_store(kind, request, work)


def test_a_sqlite_store_is_read_by_a_second_one_on_the_same_file(tmp_path: Path) -> None:
    async def main() -> None:
        first, second = SqliteRunStore(tmp_path / "x.sqlite"), SqliteRunStore(tmp_path / "x.sqlite")
        try:
            run = a_run("t1")
            await first.put_run(run)
            back = await second.get_run(run.run_id)
            assert back is not None and back.to_dict() == run.to_dict()
        finally:
            await first.aclose()
            await second.aclose()

    asyncio.run(main())
