"""``RedisRunStore``: run records, thread records and each run's log in Redis (one node, or
a cluster): a record is a JSON string, a run's log is a Redis Stream of its entries, packed
as checkpoints are (``_codec``; trimmed to ``max_events``, expiring ``events_ttl`` seconds
after the run ended), so any server on the same Redis lists every run and streams and
rejoins any run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ._codec import dump_data, load_data
from ._log import Entry
from .records import ACTIVE, Run, ThreadRecord
from .store import RunStore

__all__ = ["RedisRunStore"]

MAX_CONNECTIONS = 1024  # a server's connections to Redis (redis-py's default is 100)


class RedisRunStore(RunStore):
    """Runs and threads in Redis through ``client`` (a ``redis.asyncio.Redis`` or
    ``RedisCluster`` that answers bytes, not ``decode_responses``; the store closes it only
    if it made it, with ``from_url``). Keys start
    with ``prefix``; no command spans two keys, so every key may live on another node."""

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "graph-agent:runs",
        max_events: int = 100_000,
        events_ttl: float = 86_400.0,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.max_events = max_events
        self.events_ttl = events_ttl
        self._owned = False

    @classmethod
    def from_url(
        cls, url: str, *, max_connections: int = MAX_CONNECTIONS, **options: Any
    ) -> RedisRunStore:
        """A store on the Redis at ``url`` (``redis://``, ``rediss://``, ``unix://``; a
        cluster for ``redis+cluster://`` or when ``cluster=True`` is given). Each client
        that follows a run holds a connection while it waits for the run's next event: past
        ``max_connections`` (on one node) a request waits for a connection to come free,
        instead of failing."""
        cluster = options.pop("cluster", False) or "+cluster://" in url
        url = url.replace("+cluster://", "://", 1)
        if cluster:
            from redis.asyncio.cluster import RedisCluster

            client: Any = RedisCluster.from_url(url)
        else:
            import redis.asyncio

            pool = redis.asyncio.BlockingConnectionPool.from_url(
                url, max_connections=max_connections, timeout=None
            )
            client = redis.asyncio.Redis.from_pool(pool)
        store = cls(client, **options)
        store._owned = True
        return store

    def __repr__(self) -> str:
        return f"RedisRunStore(prefix={self.prefix!r})"

    def _key(self, kind: str, name: str = "") -> str:
        return f"{self.prefix}:{kind}:{name}" if name else f"{self.prefix}:{kind}"

    # -- threads -----------------------------------------------------------------------------

    async def put_thread(self, record: ThreadRecord) -> None:
        await self.client.set(self._key("thread", record.thread_id), json.dumps(record.to_dict()))
        await self.client.sadd(self._key("threads"), record.thread_id)

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        data = await self.client.get(self._key("thread", thread_id))
        return ThreadRecord.from_dict(json.loads(data)) if data is not None else None

    async def list_threads(self) -> list[ThreadRecord]:
        found: list[ThreadRecord] = []
        for thread_id in sorted(await self.client.smembers(self._key("threads"))):
            record = await self.get_thread(_text(thread_id))
            if record is not None:
                found.append(record)
        return found

    async def delete_thread(self, thread_id: str) -> None:
        for run in await self.thread_runs(thread_id):
            await self.delete_run(run.run_id)
        await self.client.delete(self._key("thread", thread_id))
        await self.client.delete(self._key("thread-runs", thread_id))
        await self.client.srem(self._key("threads"), thread_id)

    # -- runs --------------------------------------------------------------------------------

    async def put_run(self, run: Run) -> None:
        await self.client.set(self._key("run", run.run_id), run.to_json())
        await self.client.zadd(
            self._key("thread-runs", run.thread_id), {run.run_id: run.created_at}, nx=True
        )
        if run.status in ACTIVE:
            await self.client.sadd(self._key("active"), run.run_id)
        else:
            await self.client.srem(self._key("active"), run.run_id)
            await self.client.expire(self._key("log", run.run_id), int(self.events_ttl))

    async def get_run(self, run_id: str) -> Run | None:
        data = await self.client.get(self._key("run", run_id))
        return Run.from_json(data) if data is not None else None

    async def _runs(self, ids: Sequence[Any]) -> list[Run]:
        found: list[Run] = []
        for run_id in ids:
            run = await self.get_run(_text(run_id))
            if run is not None:
                found.append(run)
        return found

    async def thread_runs(self, thread_id: str) -> list[Run]:
        ids = await self.client.zrevrange(self._key("thread-runs", thread_id), 0, -1)
        return await self._runs(ids)

    async def active_runs(self) -> list[Run]:
        found = await self._runs(list(await self.client.smembers(self._key("active"))))
        return sorted((r for r in found if r.status in ACTIVE), key=lambda r: r.created_at)

    async def delete_run(self, run_id: str) -> None:
        run = await self.get_run(run_id)
        if run is not None:
            await self.client.zrem(self._key("thread-runs", run.thread_id), run_id)
        await self.client.srem(self._key("active"), run_id)
        await self.client.delete(self._key("run", run_id))
        await self.client.delete(self._key("log", run_id))

    # -- event logs --------------------------------------------------------------------------

    async def append_events(self, run_id: str, entries: Sequence[Entry]) -> None:
        # the stream id is the entry's own ("<n>-1"): Redis refuses an id at or below the
        # last one, so no entry is kept twice, and a reader resumes at "<n>-1"
        key = self._key("log", run_id)
        pipe = self.client.pipeline(transaction=False)
        for entry in entries:
            fields = {"kind": entry.kind, "data": dump_data(entry.data)}
            pipe.xadd(key, fields, id=f"{entry.id}-1", maxlen=self.max_events, approximate=True)
        await pipe.execute()

    async def events(self, run_id: str) -> list[Entry]:
        rows = await self.client.xrange(self._key("log", run_id))
        return [e for e in (_entry(i, f) for i, f in rows) if e.kind != END]

    async def end_events(self, run_id: str) -> None:
        """Mark the run's log ended, after its last entry (readers stop there)."""
        key = self._key("log", run_id)
        await self.client.xadd(key, {"kind": END})
        await self.client.expire(key, int(self.events_ttl))  # a log with no entry is made here

    async def last_event(self, run_id: str) -> int:
        """The number of the run's last kept entry (0: none)."""
        rows = await self.client.xrevrange(self._key("log", run_id), count=1)
        return int(_text(rows[0][0]).partition("-")[0]) if rows else 0

    async def follow_events(
        self, run_id: str, after: int, block: float
    ) -> tuple[list[Entry], bool]:
        """The run's entries after ``after`` (waiting up to ``block`` seconds for one), and
        whether its log has ended."""
        key = self._key("log", run_id)
        found = await self.client.xread({key: f"{after}-1"}, block=max(1, int(block * 1000)))
        rows = found[0][1] if found else []
        entries = [_entry(i, f) for i, f in rows]
        ended = any(e.kind == END for e in entries)
        return [e for e in entries if e.kind != END], ended

    async def follow_end(self, run_id: str, after: str, block: float) -> tuple[str, bool]:
        """Whether the run's log has ended, waiting up to ``block`` seconds for an entry
        after the stream id ``after`` (``"0-0"``: from the start); and the id of the last
        entry read, to go on from. The entries are not decoded (a ``join`` needs none)."""
        key = self._key("log", run_id)
        found = await self.client.xread({key: after}, block=max(1, int(block * 1000)))
        rows = found[0][1] if found else []
        ended = any(_text(f.get(b"kind", f.get("kind", b""))) == END for _, f in rows)
        return (_text(rows[-1][0]) if rows else after), ended

    # -- cancel across processes -------------------------------------------------------------

    async def request_cancel(self, run_id: str, *, rollback: bool = False) -> None:
        """Ask whichever worker runs ``run_id`` to cancel it (kept, and published)."""
        said = "rollback" if rollback else "interrupt"
        await self.client.set(self._key("cancel", run_id), said, ex=int(self.events_ttl))
        await self.client.publish(self._key("cancels"), f"{said}:{run_id}")

    async def cancel_requested(self, run_id: str) -> str | None:
        """``"interrupt"`` or ``"rollback"`` if a cancel of ``run_id`` was asked."""
        said = await self.client.get(self._key("cancel", run_id))
        return _text(said) if said is not None else None

    def cancels_channel(self) -> str:
        return self._key("cancels")

    async def release(self) -> None:
        pool = getattr(self.client, "connection_pool", None)
        if pool is not None:  # a single node: its pool opens new connections when used
            await pool.disconnect()
        elif self._owned:  # a cluster client: closed (it is this store's)
            await self.client.aclose()

    async def aclose(self) -> None:
        if self._owned:
            await self.client.aclose()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


END = "__end__"  # the event that closes a run's stream (never shown to a client)


def _entry(stream_id: Any, fields: dict[Any, Any]) -> Entry:
    got = {_text(k): v for k, v in fields.items()}
    kind = _text(got["kind"])
    data = load_data(got["data"]) if kind != END else None
    return Entry(_text(stream_id).partition("-")[0], kind, data)
