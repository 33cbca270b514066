"""A RedisSaver's leases: one key per thread (``<prefix>:{<thread>}:lease``, the thread's hash
tag, so a fenced write's script reads it in the thread's slot) holding the token, expiring by
``PX``. Each operation is one ``_lua.LEASE`` script call, written once as effects
(``_io``) and run by the sync client (``perform``) or the async one (``aperform``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._savers.leases import ACQUIRE, RELEASE, RENEW, Op, check_args, check_thread, milliseconds
from ..effects import Steps, aperform, perform
from ..errors import CheckpointError
from ._io import Command, ScriptCall, attempts

__all__ = ["RedisLeases"]

_OPS: dict[Op, str] = {ACQUIRE: "a", RENEW: "r", RELEASE: "x"}  # the LEASE script's op


class RedisLeases:
    """``RedisSaver``'s lease API (``BaseCheckpointSaver``'s). A lost connection is retried
    as a write is (``write_retries``): each operation is idempotent for its token."""

    client: Any
    async_client: Any
    write_retries: int
    read_retries: int
    backoff: float
    _sleep: Callable[[float], None]
    _lease: Any  # the LEASE script on the sync client (None without one)
    _alease: Any  # on the async client

    if TYPE_CHECKING:

        def lease_key(self, thread_id: str) -> str: ...

        async def _aready(self) -> None: ...

    def _lease_steps(
        self, op: Op, thread_id: str, token: str, ttl: float, client: Any
    ) -> Steps[bool]:
        args = [_OPS[op], token, milliseconds(ttl) if op != RELEASE else 0]
        call = ScriptCall(self._lease, self._alease, [self.lease_key(thread_id)], args)
        reply = yield from attempts(
            call, client, thread_id, "lease", self.write_retries, self.backoff, self._sleep
        )
        return int(reply) == 1

    def _holder_steps(self, thread_id: str, client: Any) -> Steps[str | None]:
        call = Command(client.get, self.lease_key(thread_id))
        reply = yield from attempts(
            call, client, thread_id, "lease holder", self.read_retries, self.backoff, self._sleep
        )
        if reply is None:
            return None
        return reply.decode() if isinstance(reply, bytes) else str(reply)

    def _sync(self, method: str) -> Any:
        if self.client is None:
            raise CheckpointError(f"this RedisSaver has only an async client: use a{method}()")
        return self.client

    def acquire_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
        ttl = check_args("acquire_lease", thread_id, token, ttl_seconds)
        client = self._sync("acquire_lease")
        return perform(self._lease_steps(ACQUIRE, thread_id, token, ttl, client), self)

    def renew_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
        ttl = check_args("renew_lease", thread_id, token, ttl_seconds)
        client = self._sync("renew_lease")
        return perform(self._lease_steps(RENEW, thread_id, token, ttl, client), self)

    def release_lease(self, thread_id: str, token: str) -> None:
        check_args("release_lease", thread_id, token)
        client = self._sync("release_lease")
        perform(self._lease_steps(RELEASE, thread_id, token, 0.0, client), self)

    def lease_holder(self, thread_id: str) -> str | None:
        check_thread("lease_holder", thread_id)
        return perform(self._holder_steps(thread_id, self._sync("lease_holder")), self)

    async def _alease_op(self, op: Op, thread_id: str, token: str, ttl: float) -> bool:
        if self.async_client is None:  # a sync client only: its calls in a worker thread
            steps = self._lease_steps(op, thread_id, token, ttl, self.client)
            return await asyncio.to_thread(perform, steps, self)
        await self._aready()
        return await aperform(self._lease_steps(op, thread_id, token, ttl, self.async_client), self)

    async def aacquire_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
        ttl = check_args("aacquire_lease", thread_id, token, ttl_seconds)
        return await self._alease_op(ACQUIRE, thread_id, token, ttl)

    async def arenew_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
        ttl = check_args("arenew_lease", thread_id, token, ttl_seconds)
        return await self._alease_op(RENEW, thread_id, token, ttl)

    async def arelease_lease(self, thread_id: str, token: str) -> None:
        check_args("arelease_lease", thread_id, token)
        await self._alease_op(RELEASE, thread_id, token, 0.0)

    async def alease_holder(self, thread_id: str) -> str | None:
        check_thread("alease_holder", thread_id)
        if self.async_client is None:
            return await asyncio.to_thread(
                perform, self._holder_steps(thread_id, self.client), self
            )
        await self._aready()
        return await aperform(self._holder_steps(thread_id, self.async_client), self)
