"""W16: runs that outlive every process, measured (benchmarks/WORKLOADS.md, "W16 workers";
ours only: LangGraph has no counterpart to run here).

Each configuration on a fresh redis-server of its own (a free loopback port, no persistence),
every process its own, driven by benchmarks/workers_client.py (``langgraph-sdk``):

- ``W16_workers_{1,2,4}``: runs per second with 1, 2 and 4 ``graph-agent worker`` processes
  (``--concurrency`` C each, ``$BENCH_W16_CONCURRENCY``) behind one ``graph-agent serve
  --queue``, on the agent of benchmarks/workers_agents.py (one model call that awaits 50 ms);
  ``W16_scaling`` the ratios to 1 worker.
- ``W16_first_event_embedded`` / ``_queued``: from the POST of ``runs/stream`` to the first
  event of the run (p50, p99), ``graph-agent serve`` without ``--queue`` (SQLite saver, its
  default) and with it (1 worker).
- ``W16_added_per_run``: W15's agent and client (benchmarks/serving_agents.py,
  benchmarks/serving_client.py, sequential ``runs.wait`` and ``runs.stream``) served embedded
  (memory saver, as W15; and the Redis saver) and queued (1 worker, threads in the same
  Redis): the queued per-run time minus the embedded one, and the Redis round trips per run
  (benchmarks/_redis_trips.py: ``MONITOR`` around sequential ``runs.wait``, by what they are
  for, the idle rate subtracted).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import _common
import _serving
from _redis_trips import count_round_trips
from _servers import free_port, redis_binary, server

__all__ = ["w16_workers"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CLIENT = HERE / "workers_client.py"
CLI = Path(sys.executable).with_name("graph-agent")
CLI_WORKER = [str(CLI)]  # how a worker is started

# runs / threads per throughput trial; samples: sequential streams per backend (latency);
# added_runs: W15's sequential runs per trial and kind; concurrency: each worker's --concurrency.
# 2: one worker's runs/s is then set by its own slots (docket sleeps 100 ms when all are busy:
# ~10 runs/s per slot with the 50 ms model), and 4 workers still fit in 2 cores (~25 ms of CPU
# per run, client, server, workers and Redis together); benchmarks/BASELINE.md, W16
SIZES: dict[str, Any] = {"workers": (1, 2, 4), "runs": 200, "threads": 40, "trials": 3, "samples": 100,
         "added_runs": 50, "added_trials": 1, "concurrency": 2}  # fmt: skip
SMOKE: dict[str, Any] = {"workers": (1,), "runs": 10, "threads": 5, "trials": 1, "samples": 5,
         "added_runs": 3, "added_trials": 1, "concurrency": 2}  # fmt: skip
COUNTED = 20  # sequential runs.wait watched with MONITOR


def _env(home: str) -> dict[str, str]:
    return dict(os.environ, HOME=home, PYTHONPATH=os.pathsep.join([str(ROOT), str(HERE)]))


def _client(script: Path, url: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(script), "--url", url, *args], capture_output=True, text=True, cwd=HERE
    )
    if done.returncode != 0:
        raise RuntimeError(f"W16 client failed ({args}):\n{done.stderr[-4000:]}")
    return dict(json.loads(done.stdout.splitlines()[-1]))


async def _count_workers(url: str) -> int:
    from docket import Docket

    async with Docket(name="graph-agent", url=url) as docket:
        return len(await docket.workers())


def _tails(home: str) -> str:
    """The last lines of every server's and worker's log in ``home`` (shown on a failure)."""
    return "\n".join(
        f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}"
        for log in sorted(Path(home).glob("*.log"))
    )


@contextmanager
def _fleet(
    redis_url: str, target: str, workers: int, concurrency: int, home: str
) -> Iterator[tuple[str, int, list[int]]]:
    """``graph-agent serve TARGET --queue`` and ``workers`` workers (their logs in ``home``);
    yields (server URL, server pid, worker pids) once every worker has said it is there
    (docket's heartbeat)."""
    env = _env(home)
    port = free_port()
    serve = [str(CLI), "serve", target, "--queue", redis_url, "--host", "127.0.0.1",
             "--port", str(port), "--no-access-log"]  # fmt: skip
    worker = [
        *CLI_WORKER,
        "worker",
        target,
        "--queue",
        redis_url,
        "--concurrency",
        str(concurrency),
    ]
    with ExitStack() as stack:
        procs = []
        for n, command in enumerate(
            [serve] + [[*worker, "--name", f"w{n}"] for n in range(workers)]
        ):
            log = stack.enter_context(open(Path(home) / f"fleet-{n}.log", "wb"))
            procs.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL))  # fmt: skip
        stack.callback(_stop, procs)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while not (
            _serving._answers(url + "/ok") and asyncio.run(_count_workers(redis_url)) >= workers
        ):
            if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                raise RuntimeError(f"W16: the server or a worker did not start:\n{_tails(home)}")
            time.sleep(0.1)
        try:
            yield url, procs[0].pid, [p.pid for p in procs[1:]]
        except Exception as error:
            raise RuntimeError(f"{error}\n{_tails(home)}") from error


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _round_trips(base: str, redis_url: str) -> dict[str, Any]:
    """Redis round trips per sequential ``runs.wait`` of W15's agent (``MONITOR``)."""
    import httpx

    body = {"assistant_id": "bench", "input": {"messages": [{"role": "user", "content": "go"}]}}
    with httpx.Client(base_url=base, timeout=60) as http:
        threads = [http.post("/threads", json={}).json()["thread_id"] for _ in range(COUNTED)]

        def run(i: int) -> None:
            http.post(f"/threads/{threads[i]}/runs/wait", json=body).raise_for_status()

        return count_round_trips(redis_url, COUNTED, run)


def _cpu(pids: list[int]) -> float:
    from serving_client import cpu_seconds

    return sum(cpu_seconds(p) for p in pids)


def _redis_cpu(redis_url: str) -> float:
    import redis

    with redis.Redis.from_url(redis_url) as client:
        cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def w16_workers() -> None:
    sizes = dict(SMOKE if _common.SIZES["w16_smoke"] else SIZES)
    concurrency = int(os.environ.get("BENCH_W16_CONCURRENCY", sizes["concurrency"]))
    binary = redis_binary()
    if binary is None:
        print("# W16 skipped: no redis-server or valkey-server on PATH (or $REDIS_SERVER)",
              file=sys.stderr)  # fmt: skip
        return
    target = "workers_agents:agent"
    machine = {"cpus": os.cpu_count(), "concurrency": concurrency}
    lines: list[dict[str, Any]] = []
    rates: dict[int, float] = {}
    queued_latency: dict[str, Any] = {}
    with _serving.temp_dir() as home:
        for n in sizes["workers"]:
            with (
                server([binary]) as redis_url,
                _fleet(redis_url, target, n, concurrency, home) as (url, pid, pids),
            ):
                c0, w0, r0 = _cpu([pid]), _cpu(pids), _redis_cpu(redis_url)
                got = _client(CLIENT, url, "--phase", "throughput", "--runs", str(sizes["runs"]),
                              "--threads", str(sizes["threads"]), "--trials", str(sizes["trials"]))  # fmt: skip
                made = got.pop("runs_made")
                cpu = {
                    "server": _cpu([pid]) - c0,
                    "workers": _cpu(pids) - w0,
                    "redis": _redis_cpu(redis_url) - r0,
                    "client": got.pop("client_cpu_s"),
                }
                if n == 1:
                    queued_latency = _client(CLIENT, url, "--phase", "latency",
                                             "--samples", str(sizes["samples"]))  # fmt: skip
            rates[n] = got["runs_per_s"]
            lines.append({
                "workload": f"W16_workers_{n}", "n": sizes["runs"], "seconds": got["wall_s"],
                "per_op_us": round(1e6 / got["runs_per_s"], 1), "unit": "run (wall / runs)",
                "workers": n, **got, "cpu_ms_per_run": {k: round(v / made * 1e3, 2) for k, v in cpu.items()},
                "cpu_ms_per_run_total": round(sum(cpu.values()) / made * 1e3, 2),
                **machine,
            })  # fmt: skip
        lines.append({
            "workload": "W16_scaling", "n": len(rates), "seconds": 0, "per_op_us": None,
            "runs_per_s": rates,
            "speedup": {n: round(r / rates[1], 2) for n, r in rates.items()}, **machine,
        })  # fmt: skip
        # the embedded backend: serve without --queue, its default SQLite saver (in HOME)
        serve = [str(CLI), "serve", target, "--host", "127.0.0.1", "--port", "{port}",
                 "--saver", f"sqlite:{Path(home) / 'embedded.sqlite'}", "--no-access-log"]  # fmt: skip
        with _serving.http_server(serve, _env(home), "/ok", cwd=home) as (url, _pid):
            embedded_latency = _client(CLIENT, url, "--phase", "latency",
                                       "--samples", str(sizes["samples"]))  # fmt: skip
        for name, got in (("embedded", embedded_latency), ("queued", queued_latency)):
            lines.append({
                "workload": f"W16_first_event_{name}", "n": got["samples"], "seconds": 0,
                "per_op_us": round(got["first_values_p50_ms"] * 1e3, 1),
                "unit": "ms from the POST of runs/stream to the run's first event", **got, **machine,
            })  # fmt: skip
        lines.append(_added(sizes, binary, home, machine))
    for line in lines:
        line.setdefault("peak_rss_mb", None)
        print(json.dumps(line), flush=True)


def _added(
    sizes: Mapping[str, Any], binary: str, home: str, machine: dict[str, Any]
) -> dict[str, Any]:
    """W15's agent and client: queued (1 worker) against embedded, per run."""
    w15 = {"runs": sizes["added_runs"], "trials": sizes["added_trials"]}
    target = "serving_agents:agent"
    out: dict[str, Any] = {}
    with server([binary]) as redis_url:
        for saver in ("memory", redis_url + "/1"):
            serve = [str(CLI), "serve", target, "--host", "127.0.0.1", "--port", "{port}",
                     "--saver", saver, "--no-access-log"]  # fmt: skip
            with _serving.http_server(serve, _env(home), "/ok", cwd=home) as (url, pid):
                got = _serving.run_client(url, pid, "runs", w15)
            key = "memory" if saver == "memory" else "redis"
            out[f"embedded_{key}"] = {"wait_us": got["wait_us"], "stream_us": got["stream_us"]}
            if key == "redis":
                with _serving.http_server(serve, _env(home), "/ok", cwd=home) as (url, pid):
                    out["embedded_redis_round_trips"] = _round_trips(url, redis_url)
    with server([binary]) as redis_url, _fleet(redis_url, target, 1, 8, home) as (url, pid, _):
        got = _serving.run_client(url, 0, "runs", w15)
        out["queued"] = {"wait_us": got["wait_us"], "stream_us": got["stream_us"]}
        out["queued_round_trips"] = _round_trips(url, redis_url)
    q, e, m = out["queued"], out["embedded_redis"], out["embedded_memory"]
    return {
        "workload": "W16_added_per_run", "n": sizes["added_runs"],
        "seconds": round(q["wait_us"] * sizes["added_runs"] / 1e6, 6), "per_op_us": q["wait_us"],
        "unit": "run (W15's agent, sequential runs.wait, queued with 1 worker)",
        "added_us_per_run_vs_embedded_redis": round(q["wait_us"] - e["wait_us"], 1),
        "added_us_per_run_vs_embedded_memory": round(q["wait_us"] - m["wait_us"], 1),
        "added_stream_us_per_run_vs_embedded_redis": round(q["stream_us"] - e["stream_us"], 1),
        **out, **machine,
    }  # fmt: skip
