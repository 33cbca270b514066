"""A RedisSaver's async methods run the same logic as its sync ones (``checkpoint/redis/_io.py``:
each operation a generator of effects, run by ``perform`` or ``aperform``), and on a plain
``redis.asyncio.Redis`` send their scripts on connections kept from the client's pool
(``checkpoint/redis/_lean.py``, ``AsyncScriptCalls``)."""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import fakeredis
import pytest
import redis
import redis.asyncio

from checkpoint import (
    Checkpoint,
    CheckpointConflictError,
    CheckpointDelta,
    CheckpointUnavailableError,
    RedisSaver,
    created_at_of,
    new_checkpoint_id,
)
from checkpoint.redis._lean import KEEP, AsyncScriptCalls, lean_async_pool

from ._graphs import chat_graph


def _saver(url: str, **options: Any) -> RedisSaver:
    return RedisSaver.from_url(url, key_prefix=f"alean-{uuid.uuid4().hex[:8]}", **options)


def _checkpoint(thread_id: str, parent: Checkpoint | None, text: str) -> Checkpoint:
    cid = new_checkpoint_id()
    messages = [*(parent.values["messages"] if parent is not None else ()), text]
    values = {"messages": messages, "turns": len(messages)}
    step = parent.step + 1 if parent is not None else 0
    parent_id = parent.id if parent is not None else None
    return Checkpoint(cid, thread_id, parent_id, step, (), values, created_at_of(cid))


def _delta(checkpoint: Checkpoint) -> CheckpointDelta:
    if checkpoint.parent_id is None:
        return CheckpointDelta.full(checkpoint.values)
    return CheckpointDelta(
        appended={"messages": checkpoint.values["messages"][-1:]},
        replaced={"turns": checkpoint.values["turns"]},
    )


def _commands(client: redis.Redis) -> dict[str, int]:
    stats = client.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


def _run(saver: RedisSaver, body: Callable[[], Awaitable[Any]]) -> Any:
    """``body()`` in a new loop, closing the saver's async side in that loop."""

    async def main() -> Any:
        try:
            return await body()
        finally:
            await saver.aclose()

    return asyncio.run(main())


# -- the logic, once ---------------------------------------------------------------------------


def test_retries_pause_alike_and_log_alike_sync_and_async(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The pauses are ``backoff * 2**(n-1)`` times a factor in [0.5, 1.5) (here 1), on both
    paths, with the same WARNING."""
    monkeypatch.setattr(random, "random", lambda: 0.5)
    server = fakeredis.FakeServer()
    sleeps: list[float] = []
    sync = RedisSaver(fakeredis.FakeRedis(server=server), sleep=sleeps.append, backoff=0.001)
    asaver = RedisSaver(fakeredis.FakeAsyncRedis(server=server), backoff=0.001)
    chat_graph(sync).invoke({"messages": ["hi"]}, {"thread_id": "t"})

    def flaky(script: Any) -> Any:
        failures = iter([redis.ConnectionError("reset"), redis.BusyLoadingError("loading")])

        def call(**kwargs: Any) -> Any:
            error = next(failures, None)
            if error is not None:
                raise error
            return script(**kwargs)

        return call

    sync._read = flaky(sync._read)
    asaver._aread = flaky(asaver._aread)
    waits: list[float] = []
    real_sleep = asyncio.sleep

    async def recorded(seconds: float) -> None:
        waits.append(seconds)
        await real_sleep(0)

    with caplog.at_level(logging.WARNING, logger="checkpoint.redis"):
        assert sync.get("t").values["turns"] == 1
        monkeypatch.setattr(asyncio, "sleep", recorded)
        assert asyncio.run(asaver.aget("t")).values["turns"] == 1
    assert sleeps == waits == [0.001, 0.002]
    # each fake client names a host of its own: what follows it is the same
    messages = [
        r.getMessage().split(": ", 1)[1] for r in caplog.records if r.name == "checkpoint.redis"
    ]
    assert len(messages) == 4 and messages[:2] == messages[2:]
    assert (
        messages[0] == "reading thread 't' failed (ConnectionError: reset); retry 1 of 3 in 0.00 s"
    )


def test_a_lost_async_connection_is_the_same_clear_error() -> None:
    saver = RedisSaver(fakeredis.FakeAsyncRedis(), write_retries=1, backoff=0)

    async def refused(**kwargs: Any) -> Any:
        raise redis.ConnectionError("Connection refused")

    saver._awrite = refused
    first = _checkpoint("t", None, "hi")
    with pytest.raises(
        CheckpointUnavailableError,
        match=r"could not reach Redis at .* while writing thread 't' \(ConnectionError",
    ):
        asyncio.run(saver.aput(first, _delta(first)))


# -- the held head on the async path -----------------------------------------------------------


def test_aput_moves_the_held_head_and_aget_reads_nothing_more(redis_url: str) -> None:
    saver = _saver(redis_url)
    first = _checkpoint("h", None, "one")
    second = _checkpoint("h", first, "two")

    replies: list[Any] = []

    class Recorded(AsyncScriptCalls):  # what the read script answers
        __slots__ = ()

        async def read(self, held: Any) -> Any:
            reply = await super().read(held)
            replies.append(reply)
            return reply

    async def body() -> Any:
        await saver.aput(first, _delta(first))
        await saver.aput(second, _delta(second))
        assert saver._heads.head_id("h") == second.id  # held, advanced by the delta
        await saver._acalls.aclose()  # its kept connection back to the pool
        saver._acalls = Recorded(saver.async_client)
        return await saver.aget("h")

    got = _run(saver, body)
    assert got.id == second.id and got.values == second.values
    # the script answered '=' (and the stored header): the values came from the held head
    assert [reply[:2] for reply in replies] == [[second.id.encode(), b"="]]
    assert len(replies[0]) == 3


def test_a_conflicting_writer_is_refused_on_the_async_path_with_a_held_head(
    redis_url: str,
) -> None:
    prefix = f"alean-{uuid.uuid4().hex[:8]}"
    mine = RedisSaver.from_url(redis_url, key_prefix=prefix)
    other = RedisSaver.from_url(redis_url, key_prefix=prefix)
    first = _checkpoint("c", None, "one")
    theirs = _checkpoint("c", first, "theirs")
    ours = _checkpoint("c", first, "ours")

    async def body() -> Any:
        await mine.aput(first, _delta(first))
        assert mine._heads.head_id("c") == first.id
        await other.aput(theirs, _delta(theirs))
        try:
            with pytest.raises(CheckpointConflictError):
                await mine.aput(ours, _delta(ours))
            return await mine.aget("c")
        finally:
            await other.aclose()

    head = _run(mine, body)
    assert head.id == theirs.id and head.values["messages"] == ["one", "theirs"]


# -- lean async calls --------------------------------------------------------------------------


def test_only_a_plain_asyncio_client_gets_lean_calls(redis_url: str) -> None:
    class Counting(redis.asyncio.Redis):
        async def execute_command(self, *args: Any, **options: Any) -> Any:
            return await super().execute_command(*args, **options)

    async def main() -> None:
        plain = redis.asyncio.Redis.from_url(redis_url)
        overridden = Counting.from_url(redis_url)
        patched = redis.asyncio.Redis.from_url(redis_url)
        patched.execute_command = lambda *a, **k: None  # type: ignore[method-assign]
        single = redis.asyncio.Redis.from_url(redis_url, single_connection_client=True)
        provided = redis.asyncio.Redis.from_url(
            redis_url, credential_provider=redis.UsernamePasswordCredentialProvider()
        )
        clients = (plain, overridden, patched, single, provided)
        try:
            assert lean_async_pool(plain) is plain.connection_pool
            for client in (*clients[1:], fakeredis.FakeAsyncRedis(), None):
                assert lean_async_pool(client) is None, client
            assert AsyncScriptCalls(plain).lean and not AsyncScriptCalls(single).lean
        finally:
            for client in clients:
                await client.aclose()

    asyncio.run(main())


def test_one_evalsha_per_aput_and_aget_on_a_kept_pool_connection(
    redis_url: str, real_redis: redis.Redis
) -> None:
    saver = _saver(redis_url)
    app = chat_graph(saver)

    async def body() -> Any:
        assert saver._acalls.lean
        await app.ainvoke({"messages": ["warm"]}, {"thread_id": "rt"})
        pool = saver.async_client.connection_pool
        (conn,) = saver._acalls._idle
        assert conn in pool._in_use_connections  # the pool's, counted as in use
        real_redis.config_resetstat()
        for turn in range(10):
            await app.ainvoke({"messages": [f"turn {turn}"]}, {"thread_id": "rt"})
        commands = _commands(real_redis)
        assert saver._acalls._idle == [conn]
        return commands, pool, (await saver.aget("rt")).values

    commands, pool, values = _run(saver, body)
    # a turn: one head read, two writes, each one EVALSHA
    assert commands["evalsha"] == 30 and "eval" not in commands
    assert len(values["messages"]) == 22
    assert not pool._in_use_connections  # aclose gave it back, and closed the client


def test_meanwhile_runs_between_sending_and_reading_on_async_calls(redis_url: str) -> None:
    async def main() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        calls = AsyncScriptCalls(client)
        script = client.register_script("return redis.call('INCR', KEYS[1])")
        key = f"alean-{uuid.uuid4().hex[:8]}"
        seen: list[int] = []

        def meanwhile() -> None:  # the command is on its way: its connection is in use
            seen.append(len(calls._idle))

        try:
            assert await calls.call(script, [key], [], meanwhile) == 1
            assert await calls.call(script, [key], [], meanwhile) == 2 and seen == [0, 0]

            def fails() -> None:
                raise RuntimeError("meanwhile failed")

            with pytest.raises(RuntimeError, match="meanwhile failed"):
                await calls.call(script, [key], [], fails)
            assert await client.get(key) == b"3"  # the script ran, and its reply was read
            (conn,) = calls._idle
            assert await calls.call(script, [key], []) == 4 and calls._idle == [conn]
            await client.delete(key)
        finally:
            await calls.aclose()
            await client.aclose()

    asyncio.run(main())


def test_a_flushed_script_cache_is_refilled_by_the_next_async_call(
    redis_url: str, real_redis: redis.Redis
) -> None:
    saver = _saver(redis_url)
    first = _checkpoint("f", None, "one")
    second = _checkpoint("f", first, "two")

    async def body() -> Any:
        await saver.aput(first, _delta(first))
        real_redis.script_flush()
        await saver.aput(second, _delta(second))
        return await saver.aget("f")

    assert _run(saver, body).values == second.values


def test_a_killed_async_connection_is_reopened_and_the_write_retried(
    redis_url: str, real_redis: redis.Redis
) -> None:
    saver = _saver(redis_url, backoff=0)
    first = _checkpoint("k", None, "one")
    second = _checkpoint("k", first, "two")

    async def body() -> Any:
        await saver.aput(first, _delta(first))
        (conn,) = saver._acalls._idle
        real_redis.client_kill_filter(_type="normal", skipme=True)
        await saver.aput(second, _delta(second))
        assert saver._acalls._idle == [conn] and conn.is_connected  # opened again
        return await saver.aget("k")

    assert _run(saver, body).values == second.values


def test_a_cancelled_call_never_leaves_its_reply_for_the_next(redis_url: str) -> None:
    """A call cancelled after sending, before its reply is read: its connection is closed,
    so the next call on it reads its own reply, not the one left behind."""
    saver = _saver(redis_url)
    first = _checkpoint("x", None, "one")
    second = _checkpoint("x", first, "two")

    async def body() -> Any:
        await saver.aput(first, _delta(first))
        (conn,) = saver._acalls._idle
        read = conn.read_response
        waiting = asyncio.Event()

        async def stuck(*args: Any, **kwargs: Any) -> Any:  # the reply stays in the socket
            waiting.set()
            await asyncio.Event().wait()

        conn.read_response = stuck
        task = asyncio.create_task(saver.aget("x"))
        await waiting.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        conn.read_response = read
        assert saver._acalls._idle == [conn] and not conn.is_connected
        await saver.aput(second, _delta(second))  # a write reply, not the read's
        return await saver.aget("x")

    assert _run(saver, body).values == second.values


def test_at_most_keep_connections_are_kept(redis_url: str) -> None:
    saver = _saver(redis_url)
    threads = [f"g{n}" for n in range(3 * KEEP)]

    async def body() -> Any:
        firsts = [_checkpoint(t, None, "one") for t in threads]
        await asyncio.gather(*(saver.aput(c, _delta(c)) for c in firsts))
        got = await asyncio.gather(*(saver.aget(t) for t in threads))
        pool = saver.async_client.connection_pool
        return got, len(saver._acalls._idle), len(pool._in_use_connections)

    got, kept, in_use = _run(saver, body)
    assert [c.values["messages"] for c in got] == [["one"]] * len(threads)
    assert 1 <= kept <= KEEP and in_use == kept  # the others went back to the pool


def test_a_small_pool_keeps_nothing_and_still_calls_lean(redis_url: str) -> None:
    async def main() -> Any:
        client = redis.asyncio.Redis.from_url(redis_url, max_connections=3)
        saver = RedisSaver(client, key_prefix=f"alean-{uuid.uuid4().hex[:8]}")
        try:
            first = _checkpoint("s", None, "one")
            await saver.aput(first, _delta(first))
            assert saver._acalls.lean and saver._acalls._idle == []
            assert not client.connection_pool._in_use_connections
            return await saver.aget("s")
        finally:
            await client.aclose()

    assert asyncio.run(main()).values["messages"] == ["one"]


def test_a_client_passed_in_closes_the_kept_connections_with_it(redis_url: str) -> None:
    """Its owner closes the client, not the saver: the kept connections close with it."""

    async def main() -> Any:
        async with redis.asyncio.Redis.from_url(redis_url) as client:
            saver = RedisSaver(client, key_prefix=f"alean-{uuid.uuid4().hex[:8]}")
            first = _checkpoint("p", None, "one")
            await saver.aput(first, _delta(first))
            (conn,) = saver._acalls._idle
        return conn

    assert not asyncio.run(main()).is_connected
