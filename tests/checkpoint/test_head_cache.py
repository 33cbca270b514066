"""The durable savers hold the heads they read or wrote lately, decoded: a read then costs one
small query when nothing changed and decodes only what is new when another writer moved the
thread on. These tests make the held head as wrong as it could be (another writer, another
process, ``update_state``, a fork, retention pruning, a thread deleted and written again) and
check that every read still equals what a saver holding nothing reads."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fakeredis
import pytest

from checkpoint import BaseCheckpointSaver, Checkpoint, CheckpointDelta, RedisSaver, SqliteSaver
from graph_agent import RunnableConfig

from ._graphs import chat_graph

ROOT = Path(__file__).resolve().parents[2]

# name -> a function (tmp_path, request, **options) giving a saver on the shared storage
Opener = Callable[..., BaseCheckpointSaver]


def _sqlite_opener(request: pytest.FixtureRequest) -> Opener:
    path = request.getfixturevalue("tmp_path") / "shared.sqlite"

    def open_(**options: Any) -> BaseCheckpointSaver:
        saver = SqliteSaver(path, **options)
        request.addfinalizer(saver.close)
        return saver

    return open_


def _fake_redis_opener(request: pytest.FixtureRequest) -> Opener:
    server = fakeredis.FakeServer()

    def open_(**options: Any) -> BaseCheckpointSaver:
        client = fakeredis.FakeRedis(server=server)
        request.addfinalizer(client.close)
        return RedisSaver(client, **options)

    return open_


def _url_opener(request: pytest.FixtureRequest, url: str, cluster: bool = False) -> Opener:
    prefix = f"t-{uuid.uuid4().hex[:8]}"

    def open_(**options: Any) -> BaseCheckpointSaver:
        if cluster:
            import redis

            client = redis.RedisCluster.from_url(url)
            request.addfinalizer(client.close)
            return RedisSaver(client, key_prefix=prefix, **options)
        saver = RedisSaver.from_url(url, key_prefix=prefix, **options)
        request.addfinalizer(saver.close)
        return saver

    return open_


OPENERS: dict[str, Callable[[pytest.FixtureRequest], Opener]] = {
    "sqlite": _sqlite_opener,
    "redis-fake": _fake_redis_opener,
    "redis-real": lambda request: _url_opener(request, request.getfixturevalue("redis_url")),
    "redis-cluster": lambda request: _url_opener(
        request, request.getfixturevalue("cluster_url"), cluster=True
    ),
}


@pytest.fixture(params=sorted(OPENERS))
def opener(request: pytest.FixtureRequest) -> Opener:
    return OPENERS[request.param](request)


def fresh(opener: Opener, thread: str, checkpoint_id: str | None = None) -> Checkpoint | None:
    """What a saver that holds nothing reads."""
    return opener(cache_threads=0).get(thread, checkpoint_id)


def same(a: Checkpoint | None, b: Checkpoint | None) -> None:
    assert a is not None and b is not None
    assert (a.id, a.parent_id, a.step, a.next_nodes) == (b.id, b.parent_id, b.step, b.next_nodes)
    assert dict(a.values) == dict(b.values)
    assert dict(a.metadata) == dict(b.metadata)


def test_two_writers_taking_turns_on_one_thread_always_read_the_latest_head(
    opener: Opener,
) -> None:
    a, b = opener(), opener()
    apps = [chat_graph(a), chat_graph(b)]
    config = RunnableConfig(thread_id="t")
    for turn in range(8):
        out = apps[turn % 2].invoke({"messages": [f"turn {turn}"]}, config)
        assert out["turns"] == turn + 1 and len(out["messages"]) == 2 * (turn + 1)
        expected = fresh(opener, "t")
        same(a.get("t"), expected)
        same(b.get("t"), expected)


def test_a_third_writer_rewriting_the_thread_with_update_state_is_seen(opener: Opener) -> None:
    a, c = opener(), opener()
    app = chat_graph(a)
    config = RunnableConfig(thread_id="t")
    for turn in range(3):
        app.invoke({"messages": [f"turn {turn}"]}, config)
    chat_graph(c).update_state(config, {"turns": 99, "messages": ["edited"]})
    read = a.get("t")
    same(read, fresh(opener, "t"))
    assert read is not None and read.values["turns"] == 99
    assert read.values["messages"][-1] == "edited"
    out = app.invoke({"messages": ["turn 3"]}, config)  # continues on top of the edit
    assert out["messages"][-3:] == ["edited", "turn 3", "reply to turn 3"]
    same(a.get("t"), fresh(opener, "t"))


def test_a_fork_from_an_old_checkpoint_is_read_as_the_fork(opener: Opener) -> None:
    a, b = opener(), opener()
    config = RunnableConfig(thread_id="t")
    app = chat_graph(a)
    for turn in range(4):
        app.invoke({"messages": [f"turn {turn}"]}, config)
    held = a.get("t")
    assert held is not None and len(held.values["messages"]) == 8
    old = next(c for c in b.list("t") if len(c.values.get("messages", ())) == 2)
    chat_graph(b).invoke({"messages": ["fork"]}, config.replace(checkpoint_id=old.id))
    read = a.get("t")
    same(read, fresh(opener, "t"))
    assert read is not None
    assert read.values["messages"] == ["turn 0", "reply to turn 0", "fork", "reply to fork"]
    app.invoke({"messages": ["after"]}, config)  # and a's writes go on from the fork
    assert a.get("t").values["messages"][-2:] == ["after", "reply to after"]  # type: ignore[union-attr]
    same(a.get("t"), fresh(opener, "t"))


def test_retention_pruning_the_held_head_away(opener: Opener) -> None:
    a, b = opener(), opener(max_retained=1)
    config = RunnableConfig(thread_id="t")
    for turn in range(3):
        chat_graph(a).invoke({"messages": [f"turn {turn}"]}, config)
    held = a.get("t")
    assert held is not None
    for turn in range(3, 5):
        chat_graph(b).invoke({"messages": [f"turn {turn}"]}, config)
    assert [c.id for c in b.list("t")] != [held.id]  # the held head is gone from storage
    read = a.get("t")
    same(read, fresh(opener, "t"))
    assert read is not None and read.values["turns"] == 5
    assert a.get("t", held.id) is None  # and a read of the pruned id says so


def test_a_thread_deleted_and_written_again_is_read_whole(opener: Opener) -> None:
    a, b = opener(), opener()
    config = RunnableConfig(thread_id="t")
    for turn in range(3):
        chat_graph(a).invoke({"messages": [f"turn {turn}"]}, config)
    held = a.get("t")
    assert held is not None
    b.delete_thread("t")
    for turn in range(4):  # the same shape (its lists numbered as before), other content
        chat_graph(b).invoke({"messages": [f"other {turn}"]}, config)
    assert a.get("t", held.id) is None  # a still holds it, but it is gone
    read = a.get("t")
    same(read, fresh(opener, "t"))
    assert read is not None and read.values["messages"][0] == "other 0"
    b.delete_thread("t")
    assert a.get("t") is None


def _count_decodes(saver: BaseCheckpointSaver) -> list[int]:
    calls = [0]
    serializer = saver.serializer  # type: ignore[attr-defined]
    loads = serializer.loads

    def counting(data: bytes, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return loads(data, *args, **kwargs)

    serializer.loads = counting
    return calls


def test_a_read_decodes_only_what_is_new(opener: Opener) -> None:
    a, b = opener(), opener()
    config = RunnableConfig(thread_id="t")
    for turn in range(20):
        chat_graph(a).invoke({"messages": [f"turn {turn}"]}, config)
    decodes = _count_decodes(a)
    assert a.get("t") is not None
    assert decodes[0] <= 1  # the header only: nothing else changed
    chat_graph(b).invoke({"messages": ["turn 20"]}, config)
    decodes[0] = 0
    read = a.get("t")
    assert read is not None and len(read.values["messages"]) == 42
    # the header, 'turns' and the turn's two messages; never the 40 messages held
    assert decodes[0] <= 5
    same(read, fresh(opener, "t"))


def test_nothing_a_caller_does_to_what_it_read_or_wrote_reaches_the_held_head(
    opener: Opener,
) -> None:
    a = opener()
    config = RunnableConfig(thread_id="t")
    chat_graph(a).invoke({"messages": ["turn 0"]}, config)
    head = a.get("t")
    assert head is not None
    values = {"messages": ["turn 0", "reply to turn 0", "x"], "notes": {"k": [1]}}
    written = Checkpoint(
        id=f"{head.id[:-4]}ffff",
        thread_id="t",
        parent_id=head.id,
        step=head.step + 1,
        next_nodes=(),
        values=values,
        created_at=head.created_at,
    )
    delta = CheckpointDelta(appended={"messages": ["x"]}, replaced={"notes": values["notes"]})
    a.put(written, delta)
    values["notes"]["k"].append(2)  # the writer's objects change after the write
    delta.appended["messages"].append("y")  # type: ignore[attr-defined]
    read = a.get("t")
    assert read is not None and read.values["notes"] == {"k": [1]}
    assert read.values["messages"] == ["turn 0", "reply to turn 0", "x"]
    read.values["messages"].append("z")  # a reader changes what it got
    read.values["notes"]["k"].append(3)
    again = a.get("t")
    assert again is not None and again.values["notes"] == {"k": [1]}
    assert again.values["messages"] == ["turn 0", "reply to turn 0", "x"]
    same(again, fresh(opener, "t"))


def test_the_held_heads_are_bounded(opener: Opener) -> None:
    a = opener(cache_threads=2)
    for thread in ("t1", "t2", "t3"):
        chat_graph(a).invoke({"messages": ["hi"]}, RunnableConfig(thread_id=thread))
        assert a.get(thread) is not None
    assert len(a._heads) == 2  # type: ignore[attr-defined]
    assert a._heads.head_id("t1") is None  # type: ignore[attr-defined]  # least recently used
    none = opener(cache_threads=0)
    chat_graph(none).invoke({"messages": ["hi"]}, RunnableConfig(thread_id="t4"))
    assert none.get("t4") is not None and len(none._heads) == 0  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="cache_threads"):
        opener(cache_threads=-1)


def test_sqlite_a_second_process_moving_the_thread_on(tmp_path: Path) -> None:
    path = tmp_path / "two.sqlite"
    with SqliteSaver(path) as saver:
        app = chat_graph(saver)
        config = RunnableConfig(thread_id="t")
        app.invoke({"messages": ["turn 0"]}, config)
        assert saver.get("t") is not None
        code = (
            "import sys; from checkpoint import SqliteSaver; "
            "from graph_agent import RunnableConfig; "
            "from tests.checkpoint._graphs import chat_graph; "
            "s = SqliteSaver(sys.argv[1]); "
            "chat_graph(s).invoke({'messages': ['elsewhere']}, RunnableConfig(thread_id='t')); "
            "s.close()"
        )
        subprocess.run([sys.executable, "-c", code, str(path)], cwd=ROOT, check=True, timeout=60)
        read = saver.get("t")
        assert read is not None and read.values["messages"][-2:] == [
            "elsewhere",
            "reply to elsewhere",
        ]
        out = app.invoke({"messages": ["turn 2"]}, config)
        assert out["turns"] == 3 and len(out["messages"]) == 6
        final = saver.get("t")
    with SqliteSaver(path, cache_threads=0) as check:
        same(check.get("t"), final)


@pytest.mark.parametrize("backend", ["redis-fake", "redis-real"])
def test_async_redis_clients_hold_heads_too(backend: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("redis_url") if backend == "redis-real" else ""
    prefix = f"t-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        if url:
            a = RedisSaver.from_url(url, key_prefix=prefix)
            b = RedisSaver.from_url(url, key_prefix=prefix)
            fresh_saver = RedisSaver.from_url(url, key_prefix=prefix, cache_threads=0)
        else:
            server = fakeredis.FakeServer()
            a, b, fresh_saver = (
                RedisSaver(fakeredis.FakeAsyncRedis(server=server), **options)
                for options in ({}, {}, {"cache_threads": 0})
            )
        try:
            apps = [chat_graph(a), chat_graph(b)]
            config = RunnableConfig(thread_id="t")
            for turn in range(6):
                await apps[turn % 2].ainvoke({"messages": [f"turn {turn}"]}, config)
                expected = await fresh_saver.aget("t")
                same(await a.aget("t"), expected)
                same(await b.aget("t"), expected)
            decodes = _count_decodes(a)
            assert await a.aget("t") is not None and decodes[0] <= 1
            await apps[1].ainvoke({"messages": ["turn 6"]}, config)
            decodes[0] = 0
            read = await a.aget("t")
            assert read is not None and read.values["messages"][-1] == "reply to turn 6"
            assert decodes[0] <= 5
        finally:
            for saver in (a, b, fresh_saver):
                await saver.aclose()

    asyncio.run(main())
