"""On a plain ``redis.asyncio.Redis`` a RedisSaver's async script calls go on connections
kept from the client's pool (``checkpoint/redis/_lean.py``, ``AsyncScriptCalls``)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import fakeredis
import pytest
import redis
import redis.asyncio

from checkpoint.redis._lean import AsyncScriptCalls, lean_async_pool


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
