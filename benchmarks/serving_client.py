"""W15's client: one program for both servers (ours, ``graph-agent serve``; LangGraph's,
``langgraph dev``), run in its own process by benchmarks/serving.py and
benchmarks/peer_serving.py. It needs only ``langgraph-sdk`` (0.4.14 in both venvs) and httpx.

    python benchmarks/serving_client.py --url URL --phase runs --runs 200 --trials 3
    python benchmarks/serving_client.py --url URL --phase streams --streams 1000 --hold-s 4 \
        --server-pid PID --trials 3

Prints one JSON object (the launcher adds its in-process figures and emits the workload's
lines). Both phases use the SDK's async client (``LangGraphClient``) over one
``httpx.AsyncClient`` whose pool admits every stream at once (the SDK's default pool stops at
100 connections) and whose transport does not retry (an error is counted, not hidden).

``runs`` (assistant ``bench``, K = 2): ``--runs`` sequential runs per trial, each on its own
thread, created before the timed loop (thread creation is timed apart, ``thread_create_us``):
``runs.wait``, then ``runs.stream`` with ``STREAM_MODES``; each run's answer is checked, and
every SSE part the SDK yields is counted (``metadata`` included). Warm-up: ``WARMUP`` runs of
each kind. Trials alternate wait and stream; the median trial of each is reported.

``streams`` (assistant ``bench_hold``, K = 1, its tool awaits ``--hold-s`` seconds):
``--streams`` tasks started at once, each creating a thread and opening ``runs.stream``;
every stream must end with the final answer, and all must have been open at the same time
(the last first event came before the first stream ended; ``max_open`` counts them). Per
trial: wall time, time to the first event (from the task's ``runs.stream`` call; p50, p99),
errors, and the server's peak RSS (``VmHWM`` of ``/proc/<pid>/status``: a fresh server per
workload, so it is this phase's and the warm-up's peak).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
import warnings
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient

STREAM_MODES = ["values", "updates", "messages-tuple"]
WARMUP = 5
POOL = 25  # streams per httpx client in the streams phase
INPUT = {"messages": [{"role": "user", "content": "go"}]}


def count_reconnects() -> list[int]:
    """Counts the SDK's warnings that it reconnected a stream (a stream that closed before its
    run ended, as the SDK saw it): ``[n]``, updated as they come."""
    count = [0]
    show = warnings.showwarning

    def counting(message: Any, *args: Any, **kwargs: Any) -> None:
        if "Reconnecting" in str(message):
            count[0] += 1
            return
        show(message, *args, **kwargs)

    warnings.showwarning = counting
    return count


def raise_fd_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else 65536
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def make_client(url: str, connections: int) -> LangGraphClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    http = httpx.AsyncClient(
        base_url=url,
        transport=httpx.AsyncHTTPTransport(retries=0, limits=limits),
        timeout=httpx.Timeout(connect=60, read=300, write=300, pool=60),
    )
    return LangGraphClient(http)


def final_of_values(values: Any) -> str:
    return str(values["messages"][-1]["content"])


def status_kib(pid: int, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far, all its threads: its CPU-time clock (the scheduler's
    own count, to the nanosecond) where the system gives one, else ``/proc/<pid>/stat``'s
    user + system time (in clock ticks of 10 ms, which the kernel may charge by sampling)."""
    import os
    import time

    if pid not in _cpu_clocks:
        _cpu_clocks[pid] = _cpu_clock_of(pid)
    clock = _cpu_clocks[pid]
    if clock is not None:
        return time.clock_gettime(clock)
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


_cpu_clocks: dict[int, int | None] = {}


def _cpu_clock_of(pid: int) -> int | None:
    """The id of ``pid``'s CPU-time clock (``clock_getcpuclockid``), ``None`` where there is
    none (not Linux, or not allowed)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        clock = ctypes.c_int()
        if libc.clock_getcpuclockid(pid, ctypes.byref(clock)) != 0:
            return None
        import time

        time.clock_gettime(clock.value)
    except (OSError, AttributeError):
        return None
    return clock.value


async def idle_cpu_share(pid: int, seconds: float = 2.0) -> float:
    """The server's CPU time per second while no request is in flight (0 without a pid)."""
    if not pid:
        return 0.0
    c0 = cpu_seconds(pid)
    await asyncio.sleep(seconds)
    return (cpu_seconds(pid) - c0) / seconds


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# -- per-run figures ------------------------------------------------------------------------


async def one_wait(client: LangGraphClient, thread_id: str, assistant: str, answer: str) -> None:
    out = await client.runs.wait(thread_id, assistant, input=INPUT)
    assert isinstance(out, dict) and final_of_values(out) == answer, out


async def one_stream(
    client: LangGraphClient, thread_id: str, assistant: str, answer: str
) -> tuple[int, dict[str, int]]:
    events, kinds, last_values = 0, {}, None
    async for part in client.runs.stream(
        thread_id, assistant, input=INPUT, stream_mode=STREAM_MODES
    ):
        events += 1
        kind = part.event.split("|")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind == "values":
            last_values = part.data
        assert kind != "error", part
    assert last_values is not None and final_of_values(last_values) == answer, last_values
    return events, kinds


async def runs_phase(args: argparse.Namespace) -> dict[str, Any]:
    answer = f"final answer after {args.k} tool calls"
    async with make_client(args.url, 16) as client:
        for _ in range(WARMUP):
            thread = await client.threads.create()
            await one_wait(client, thread["thread_id"], args.assistant, answer)
            thread = await client.threads.create()
            await one_stream(client, thread["thread_id"], args.assistant, answer)
        idle_before = await idle_cpu_share(args.server_pid)
        trials: dict[str, list[float]] = {"wait": [], "stream": []}
        cpu: dict[str, list[float]] = {"wait": [], "stream": []}
        client_cpu: dict[str, list[float]] = {"wait": [], "stream": []}
        creates: list[float] = []
        events_per_run: set[int] = set()
        kinds: dict[str, int] = {}
        for trial in range(args.trials):
            order = ("wait", "stream") if trial % 2 == 0 else ("stream", "wait")
            for mode in order:
                t0 = time.perf_counter()
                threads = [(await client.threads.create())["thread_id"] for _ in range(args.runs)]
                creates.append((time.perf_counter() - t0) / args.runs)
                c0 = cpu_seconds(args.server_pid) if args.server_pid else 0.0
                p0 = time.process_time()
                t0 = time.perf_counter()
                for thread_id in threads:
                    if mode == "wait":
                        await one_wait(client, thread_id, args.assistant, answer)
                    else:
                        events, kinds = await one_stream(client, thread_id, args.assistant, answer)
                        events_per_run.add(events)
                trials[mode].append((time.perf_counter() - t0) / args.runs)
                client_cpu[mode].append((time.process_time() - p0) / args.runs)
                if args.server_pid:
                    cpu[mode].append((cpu_seconds(args.server_pid) - c0) / args.runs)
        idle_after = await idle_cpu_share(args.server_pid)
    assert len(events_per_run) == 1, events_per_run  # every run streams the same events
    # what the server burns while idle (timers, polls) accrues over a run's wall time too
    idle = (idle_before + idle_after) / 2
    busy = {
        mode: [c - idle * w for c, w in zip(cpu[mode], trials[mode])] for mode in cpu if cpu[mode]
    }
    return {
        "runs": args.runs,
        "wait_trial_us": [round(t * 1e6, 1) for t in trials["wait"]],
        "stream_trial_us": [round(t * 1e6, 1) for t in trials["stream"]],
        "wait_us": round(sorted(trials["wait"])[len(trials["wait"]) // 2] * 1e6, 1),
        "stream_us": round(sorted(trials["stream"])[len(trials["stream"]) // 2] * 1e6, 1),
        "events_per_run": events_per_run.pop(),
        "event_kinds": kinds,
        "thread_create_us": round(sorted(creates)[len(creates) // 2] * 1e6, 1),
        **{f"server_cpu_{mode}_raw_us": round(median(c) * 1e6, 1) for mode, c in cpu.items() if c},
        **{f"server_cpu_{mode}_us": round(median(c) * 1e6, 1) for mode, c in busy.items()},
        **{f"client_cpu_{mode}_us": round(median(c) * 1e6, 1) for mode, c in client_cpu.items()},
        "server_idle_cpu_share": [round(idle_before, 4), round(idle_after, 4)],
    }


# -- many streams at once -------------------------------------------------------------------
# The streams are opened by ``--procs`` client processes (``--phase part``), each driving its
# share on its own event loop: one Python process spends more CPU per stream on the SDK and
# httpx than a server spends on it, so a single client would measure itself. Each part reports
# its streams' times on CLOCK_MONOTONIC (``time.monotonic``, the same clock in every process).


async def held_stream(
    client: LangGraphClient, assistant: str, answer: str, gate: asyncio.Event
) -> dict[str, float]:
    await gate.wait()
    started = time.monotonic()
    thread = await client.threads.create()
    opened = time.monotonic()
    first = last = 0.0
    last_values = None
    async for part in client.runs.stream(
        thread["thread_id"], assistant, input=INPUT, stream_mode=STREAM_MODES
    ):
        last = time.monotonic()
        first = first or last
        assert part.event != "error", part
        if part.event == "values":
            last_values = part.data
    assert last_values is not None and final_of_values(last_values) == answer, last_values
    return {"started": started, "opened": opened, "first": first, "last": last}


async def part_phase(args: argparse.Namespace) -> dict[str, Any]:
    """One client process's share: ready, then (on a line on stdin) all streams at once."""
    answer = f"final answer after {args.k} tool calls"
    # one pool per POOL streams: httpcore's pool scans all its connections on every request
    # and response, so one pool of hundreds costs the client more than the server
    clients = [make_client(args.url, POOL) for _ in range(-(-args.streams // POOL))]
    gate = asyncio.Event()
    tasks = [
        asyncio.ensure_future(held_stream(clients[i // POOL], args.assistant, answer, gate))
        for i in range(args.streams)
    ]
    await asyncio.sleep(0)
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    p0 = time.process_time()
    gate.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    done = time.monotonic()
    cpu = time.process_time() - p0
    for client in clients:
        await client.aclose()
    errors: dict[str, int] = {}
    for e in results:
        if isinstance(e, BaseException):
            key = f"{type(e).__name__}: {str(e)[:120]}"
            errors[key] = errors.get(key, 0) + 1
    return {
        "records": [r for r in results if isinstance(r, dict)],
        "errors": errors,
        "done": done,
        "cpu_s": cpu,
    }


def streams_trial(args: argparse.Namespace, n: int, procs: int) -> dict[str, Any]:
    shares = [n // procs + (i < n % procs) for i in range(procs)]
    command = [sys.executable, __file__, "--phase", "part", "--url", args.url,
               "--assistant", args.assistant, "--k", str(args.k)]  # fmt: skip
    children = [
        subprocess.Popen(
            [*command, "--streams", str(share)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for share in shares
        if share
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    c0 = cpu_seconds(args.server_pid) if args.server_pid else 0.0
    t0 = time.monotonic()
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    parts = []
    for child in children:
        out, _ = child.communicate()
        assert child.returncode == 0, f"a client process failed (exit {child.returncode})"
        parts.append(json.loads(out.splitlines()[-1]))
    server_cpu = cpu_seconds(args.server_pid) - c0 if args.server_pid else None
    ok = [r for p in parts for r in p["records"]]
    errors: dict[str, int] = {}
    for p in parts:
        for key, count in p["errors"].items():
            errors[key] = errors.get(key, 0) + count
    out: dict[str, Any] = {
        "wall_s": round(max(p["done"] for p in parts) - t0, 4),
        "errors": sum(errors.values()),
        "ok": len(ok),
        "client_cpu_s": round(sum(p["cpu_s"] for p in parts), 3),
        "sdk_reconnects": sum(p["sdk_reconnects"] for p in parts),
    }
    if server_cpu is not None:
        out["server_cpu_s"] = round(server_cpu, 3)
    if errors:
        out["error_kinds"] = errors
    if ok:
        marks = sorted([(r["first"], 1) for r in ok] + [(r["last"], -1) for r in ok])
        open_now = max_open = 0
        for _, step in marks:
            open_now += step
            max_open = max(max_open, open_now)
        ttfb = [r["first"] - r["opened"] for r in ok]
        out.update(
            max_open=max_open,
            all_open_at_once=max(r["first"] for r in ok) < min(r["last"] for r in ok),
            ttfb_p50_ms=round(percentile(ttfb, 0.5) * 1e3, 1),
            ttfb_p99_ms=round(percentile(ttfb, 0.99) * 1e3, 1),
            thread_create_p50_ms=round(
                percentile([r["opened"] - r["started"] for r in ok], 0.5) * 1e3, 1
            ),
            last_first_event_s=round(max(r["first"] for r in ok) - t0, 3),
            first_end_s=round(min(r["last"] for r in ok) - t0, 3),
        )
    return out


def streams_phase(args: argparse.Namespace) -> dict[str, Any]:
    rss_before = status_kib(args.server_pid, "VmRSS") if args.server_pid else None
    warm = streams_trial(args, min(args.streams, 20), 1)
    assert warm["errors"] == 0, warm
    trials = [streams_trial(args, args.streams, args.procs) for _ in range(args.trials)]
    median = sorted(trials, key=lambda t: t["wall_s"])[len(trials) // 2]
    out = dict(median)
    out.update(
        streams=args.streams,
        client_procs=args.procs,
        hold_s=args.hold_s,
        wall_minus_hold_s=round(median["wall_s"] - args.hold_s, 4),
        trial_wall_s=[t["wall_s"] for t in trials],
        trial_errors=[t["errors"] for t in trials],
        trial_max_open=[t.get("max_open") for t in trials],
    )
    if args.server_pid:
        hwm = status_kib(args.server_pid, "VmHWM")
        out["server_peak_rss_mb"] = round(hwm / 1024, 1) if hwm else None
        out["server_rss_before_mb"] = round(rss_before / 1024, 1) if rss_before else None
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="W15's client (langgraph-sdk)")
    parser.add_argument("--url", required=True)
    parser.add_argument("--phase", choices=["runs", "streams", "part"], required=True)
    parser.add_argument("--assistant", default="bench")
    parser.add_argument("--k", type=int, default=2, help="the tool calls before the answer")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--hold-s", type=float, default=4.0)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--server-pid", type=int, default=0)
    parser.add_argument("--procs", type=int, default=4, help="client processes (streams)")
    args = parser.parse_args(argv)
    fds = raise_fd_limit()
    reconnects = count_reconnects()
    if args.phase == "streams":
        result = streams_phase(args)
    else:
        result = asyncio.run(runs_phase(args) if args.phase == "runs" else part_phase(args))
        result["sdk_reconnects"] = reconnects[0]
    import langgraph_sdk

    result.update(
        client_fd_limit=fds,
        client_python=sys.version.split()[0],
        langgraph_sdk=getattr(langgraph_sdk, "__version__", "?"),
        httpx=httpx.__version__,
    )
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
