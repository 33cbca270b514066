"""W16's client (benchmarks/workers.py runs it in its own process): ``langgraph-sdk``'s async
client, as W15's (benchmarks/serving_client.py), on the agent of benchmarks/workers_agents.py.

    python benchmarks/workers_client.py --url URL --phase throughput --runs 200 --threads 40
    python benchmarks/workers_client.py --url URL --phase latency --samples 150

``throughput``: ``--threads`` threads made first (untimed); then, timed, ``--runs`` runs made
with ``runs.create`` (``multitask_strategy="enqueue"``), run ``i`` on thread ``i % threads``,
at most ``CREATING`` requests in flight, and each joined (``runs.join``, at most
``JOINING`` at once) as soon as it is made; the clock stops when the last join returns. Every run's answer is checked. Per trial:
runs per second, and the accept time (the ``runs.create`` answer, p50).

``latency``: ``--samples`` runs one after another, each on a new thread: the time from the
``POST /threads/{id}/runs/stream`` (``stream_mode="values"``) to the first part of its stream
(``metadata``, which the server sends when it accepts) and to the first ``values`` part (the
run's input state, sent when the run starts where it runs: in the server, or in a worker),
p50 and p99; and the time to the stream's end.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient
from serving_client import median, percentile

ASSISTANT = "w16"
ANSWER = "done"
CREATING = 16  # runs.create requests in flight at once
# runs.join requests in flight at once: a join holds one of the server's Redis connections for
# its blocking read of the run's events, and the server's pool has 100 (redis-py's default);
# 200 joins at once make it answer 500 "Too many connections" (benchmarks/BASELINE.md, W16)
JOINING = 48
WARMUP = 10
INPUT = {"messages": [{"role": "user", "content": "go"}]}


def make_client(url: str, connections: int) -> LangGraphClient:
    """W15's client (serving_client.make_client: no retries, a pool for every request), whose
    idle connections are dropped after 1 s: uvicorn closes a kept-alive connection idle for
    5 s, httpx's default expiry, and a request sent on one as it closes fails with ReadError
    (seen once in 6 runs of 3 trials of 4 workers)."""
    limits = httpx.Limits(
        max_connections=connections, max_keepalive_connections=connections, keepalive_expiry=1.0
    )
    http = httpx.AsyncClient(
        base_url=url,
        transport=httpx.AsyncHTTPTransport(retries=0, limits=limits),
        timeout=httpx.Timeout(connect=60, read=300, write=300, pool=60),
    )
    return LangGraphClient(http)


def _answer(out: Any) -> str:
    return str(out["messages"][-1]["content"])


async def throughput_trial(client: Any, runs: int, threads: list[str]) -> dict[str, Any]:
    gate, joining = asyncio.Semaphore(CREATING), asyncio.Semaphore(JOINING)
    accepts: list[float] = []

    async def one(i: int) -> None:
        thread_id = threads[i % len(threads)]
        async with gate:
            t0 = time.perf_counter()
            run = await client.runs.create(
                thread_id, ASSISTANT, input=INPUT, multitask_strategy="enqueue"
            )
            accepts.append(time.perf_counter() - t0)
        async with joining:
            out = await client.runs.join(thread_id, run["run_id"])
        assert _answer(out) == ANSWER, out

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(runs)))
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "runs_per_s": runs / wall, "accept_p50_ms": median(accepts) * 1e3}


async def throughput_phase(args: argparse.Namespace) -> dict[str, Any]:
    p0 = time.process_time()
    async with make_client(args.url, 4 * args.threads + CREATING) as client:
        warm = [(await client.threads.create())["thread_id"] for _ in range(args.threads)]
        await throughput_trial(client, max(WARMUP, args.threads), warm)
        trials = []
        for _ in range(args.trials):
            threads = [(await client.threads.create())["thread_id"] for _ in range(args.threads)]
            trials.append(await throughput_trial(client, args.runs, threads))
    trials.sort(key=lambda t: t["runs_per_s"])
    best = trials[len(trials) // 2]
    return {
        "runs": args.runs,
        "threads": args.threads,
        "runs_per_s": round(best["runs_per_s"], 1),
        "wall_s": round(best["wall_s"], 3),
        "accept_p50_ms": round(best["accept_p50_ms"], 2),
        "trial_runs_per_s": [round(t["runs_per_s"], 1) for t in trials],
        "runs_made": max(WARMUP, args.threads) + args.runs * args.trials,
        "client_cpu_s": round(time.process_time() - p0, 3),
    }


async def one_stream(client: Any, thread_id: str) -> tuple[float, float, float]:
    """Seconds from the POST to the first part, to the first ``values`` part, to the end."""
    first = first_values = 0.0
    last = None
    t0 = time.perf_counter()
    async for part in client.runs.stream(thread_id, ASSISTANT, input=INPUT, stream_mode="values"):
        now = time.perf_counter() - t0
        first = first or now
        if part.event == "values":
            first_values = first_values or now
            last = part.data
        assert part.event != "error", part
    assert last is not None and _answer(last) == ANSWER, last
    return first, first_values, time.perf_counter() - t0


async def latency_phase(args: argparse.Namespace) -> dict[str, Any]:
    async with make_client(args.url, 4) as client:
        threads = [(await client.threads.create())["thread_id"] for _ in range(args.samples)]
        for _ in range(WARMUP):
            await one_stream(client, (await client.threads.create())["thread_id"])
        got = [await one_stream(client, thread_id) for thread_id in threads]
    ms = {
        name: [g[i] * 1e3 for g in got]
        for i, name in enumerate(("first_event", "first_values", "end"))
    }
    out: dict[str, Any] = {"samples": args.samples}
    for name, values in ms.items():
        out[f"{name}_p50_ms"] = round(median(values), 2)
        out[f"{name}_p99_ms"] = round(percentile(values, 0.99), 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="W16's client")
    parser.add_argument("--url", required=True)
    parser.add_argument("--phase", choices=("throughput", "latency"), required=True)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--threads", type=int, default=40)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--samples", type=int, default=150)
    args = parser.parse_args()
    phase = throughput_phase if args.phase == "throughput" else latency_phase
    print(json.dumps(asyncio.run(phase(args))), flush=True)


if __name__ == "__main__":
    main()
