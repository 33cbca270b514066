"""Microseconds per ``RedisSaver`` call, sync and async: ``put`` / ``aput`` (a thread grown
by one message per write, each write a child of the last) and ``get`` / ``aget`` (the head
of a thread the saver holds, unchanged: the read script answers ``=``).

Starts nothing: it takes the URL of a Redis it may write to (under a key prefix of its own,
deleted afterwards)::

    python benchmarks/redis_put.py redis://127.0.0.1:6379/0 --n 2000 --rounds 5

Each round runs every call ``n`` times and prints the median of the rounds, as wall time and
as this process's CPU time (the client's own work; steadier on a busy machine). To compare
two revisions, run it under each (``PYTHONPATH=/path/to/other/worktree``), alternating.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from checkpoint import Checkpoint, CheckpointDelta, RedisSaver, created_at_of, new_checkpoint_id


class _Chain:
    """A thread that grows by one message and one counter per write."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.parent: str | None = None
        self.messages: list[str] = []
        self.step = 0

    def next(self) -> tuple[Checkpoint, CheckpointDelta]:
        message = f"message {self.step}: " + "x" * 80
        self.messages.append(message)
        cid = new_checkpoint_id()
        values = {"messages": list(self.messages), "turns": self.step}
        checkpoint = Checkpoint(
            cid, self.thread_id, self.parent, self.step, ("node",), values, created_at_of(cid)
        )
        delta = (
            CheckpointDelta.full(values)
            if self.parent is None
            else CheckpointDelta(appended={"messages": [message]}, replaced={"turns": self.step})
        )
        self.parent, self.step = cid, self.step + 1
        return checkpoint, delta


def _sync_round(saver: RedisSaver, n: int) -> dict[str, tuple[float, float]]:
    chain = _Chain(f"bench-{uuid.uuid4().hex[:8]}")
    writes = [chain.next() for _ in range(n)]
    out: dict[str, tuple[float, float]] = {}
    wall, cpu = time.perf_counter(), time.process_time()
    for checkpoint, delta in writes:
        saver.put(checkpoint, delta)
    out["put"] = (time.perf_counter() - wall, time.process_time() - cpu)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        saver.get(chain.thread_id)
    out["get"] = (time.perf_counter() - wall, time.process_time() - cpu)
    saver.delete_thread(chain.thread_id)
    return out


async def _async_round(saver: RedisSaver, n: int) -> dict[str, tuple[float, float]]:
    warm = _Chain(f"warm-{uuid.uuid4().hex[:8]}")  # scripts cached, connections open
    for _ in range(50):
        await saver.aput(*warm.next())
        await saver.aget(warm.thread_id)
    await saver.adelete_thread(warm.thread_id)
    chain = _Chain(f"bench-{uuid.uuid4().hex[:8]}")
    writes = [chain.next() for _ in range(n)]
    out: dict[str, tuple[float, float]] = {}

    async def timed(name: str, calls: Callable[[], Awaitable[Any]]) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        await calls()
        out[name] = (time.perf_counter() - wall, time.process_time() - cpu)

    async def puts() -> None:
        for checkpoint, delta in writes:
            await saver.aput(checkpoint, delta)

    async def gets() -> None:
        for _ in range(n):
            await saver.aget(chain.thread_id)

    await timed("aput", puts)
    await timed("aget", gets)
    await saver.adelete_thread(chain.thread_id)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="redis://host:port/db of a server this may write to")
    parser.add_argument("--n", type=int, default=2000, help="calls per round (default 2000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    options = parser.parse_args()
    samples: dict[str, list[tuple[float, float]]] = {}

    prefix = f"bench-{uuid.uuid4().hex[:8]}"

    async def run_async() -> None:
        saver = RedisSaver.from_url(options.url, key_prefix=prefix)  # its clients, this loop's
        try:
            for name, value in (await _async_round(saver, options.n)).items():
                samples.setdefault(name, []).append(value)
        finally:
            await saver.aclose()

    saver = RedisSaver.from_url(options.url, key_prefix=prefix)
    try:
        _sync_round(saver, min(options.n, 200))  # warm up: scripts cached, connections open
        for _ in range(options.rounds):
            for name, value in _sync_round(saver, options.n).items():
                samples.setdefault(name, []).append(value)
            asyncio.run(run_async())
    finally:
        saver.close()
    result = {
        name: {
            "wall_us": round(statistics.median(w for w, _ in values) / options.n * 1e6, 1),
            "cpu_us": round(statistics.median(c for _, c in values) / options.n * 1e6, 1),
        }
        for name, values in samples.items()
    }
    if options.json:
        print(json.dumps(result))
        return
    for name, figures in result.items():
        print(f"{name:5} {figures['wall_us']:8.1f} us wall {figures['cpu_us']:8.1f} us cpu")


if __name__ == "__main__":
    main()
