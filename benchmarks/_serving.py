"""What both sides of W15 share (ours: benchmarks/serving.py; LangGraph's:
benchmarks/peer_serving.py): the sizes, the in-process timing, a server process on a free
loopback port, the client process (benchmarks/serving_client.py) and the JSON lines. Standard
library only: it runs in either venv.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _servers import free_port

HERE = Path(__file__).resolve().parent
CLIENT = HERE / "serving_client.py"

# runs: sequential runs per trial and kind (wait, stream) over HTTP, ours, and in process;
# peer_runs: LangGraph's over HTTP (each takes ~1 s there: its in-memory queue polls)
SIZES = {"runs": 200, "peer_runs": 20, "trials": 3, "streams": 1000, "hold_s": 10.0, "procs": 4}
SMOKE = {"runs": 5, "peer_runs": 2, "trials": 1, "streams": 20, "hold_s": 0.5, "procs": 2}
WARMUP = 5
# langgraph dev offline: no tracing, no version check (a thread asking PyPI), no CLI analytics
# (a thread posting the command to the CLI's usage log); the caller drops any LangSmith key
OFFLINE_ENV = {
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
}


def median(values: Sequence[float]) -> float:
    return sorted(values)[len(values) // 2]


def time_inprocess(
    run: Callable[[str], Any], arun: Callable[[str], Awaitable[Any]], runs: int, trials: int
) -> dict[str, Any]:
    """``runs`` sequential runs per trial, each on a new thread id, with ``run`` (sync invoke)
    and ``arun`` (async), alternated; medians of the wall and CPU time per run."""
    wall: dict[str, list[float]] = {"invoke": [], "ainvoke": []}
    cpu: dict[str, list[float]] = {"invoke": [], "ainvoke": []}

    async def aloop(prefix: str, n: int) -> None:
        for i in range(n):
            await arun(f"{prefix}-{i}")

    for i in range(WARMUP):
        run(f"warm-{i}")
    asyncio.run(aloop("awarm", WARMUP))
    for trial in range(trials):
        for mode in ("invoke", "ainvoke") if trial % 2 == 0 else ("ainvoke", "invoke"):
            c0, t0 = time.process_time(), time.perf_counter()
            if mode == "invoke":
                for i in range(runs):
                    run(f"t{trial}-{i}")
            else:
                asyncio.run(aloop(f"a{trial}", runs))
            wall[mode].append((time.perf_counter() - t0) / runs)
            cpu[mode].append((time.process_time() - c0) / runs)
    return {
        "inprocess_invoke_us": round(median(wall["invoke"]) * 1e6, 1),
        "inprocess_ainvoke_us": round(median(wall["ainvoke"]) * 1e6, 1),
        "inprocess_invoke_cpu_us": round(median(cpu["invoke"]) * 1e6, 1),
        "inprocess_ainvoke_cpu_us": round(median(cpu["ainvoke"]) * 1e6, 1),
        "inprocess_trial_us": [round(t * 1e6, 1) for t in wall["ainvoke"]],
    }


def _raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def http_server(
    command: Sequence[str], env: Mapping[str, str], ready_path: str, cwd: str | None = None
) -> Iterator[tuple[str, int]]:
    """``command`` (with ``{port}`` in it) on a free loopback port, its file-descriptor limit
    raised to the hard limit; yields (base URL, pid) once ``ready_path`` answers 200; stopped
    by its pid (SIGTERM, then SIGKILL). Its output goes to a temporary file, shown if it
    fails to start."""
    port = free_port()
    log = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed in the finally below)
        "w+", prefix="bench-w15-", suffix=".log", delete=False
    )
    process = subprocess.Popen(
        [part.format(port=port) for part in command],
        env=dict(env),
        cwd=cwd,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        preexec_fn=_raise_nofile,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while not _answers(url + ready_path):
            if process.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise RuntimeError(f"server did not start: {command}\n{log.read()[-4000:]}")
            time.sleep(0.1)
        yield url, process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        os.unlink(log.name)


def run_client(url: str, pid: int, phase: str, sizes: Mapping[str, Any]) -> dict[str, Any]:
    """The client program, in its own process (this interpreter), on one phase."""
    common = ["--url", url, "--server-pid", str(pid), "--trials", str(sizes["trials"])]
    if phase == "runs":
        extra = ["--assistant", "bench", "--k", "2", "--runs", str(sizes["runs"])]
    else:
        extra = ["--assistant", "bench_hold", "--k", "1", "--streams", str(sizes["streams"]),
                 "--hold-s", str(sizes["hold_s"]), "--procs", str(sizes["procs"])]  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(CLIENT), "--phase", phase, *common, *extra],
        capture_output=True,
        text=True,
        cwd=HERE,
    )
    if done.returncode != 0:
        raise RuntimeError(f"W15 client failed ({phase}):\n{done.stderr[-4000:]}")
    return dict(json.loads(done.stdout.splitlines()[-1]))


def status_mb(pid: int, field: str) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


@contextmanager
def temp_dir() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="bench-w15-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def emit_lines(
    inproc: Mapping[str, Any],
    runs: Mapping[str, Any],
    streams: Mapping[str, Any],
    server: Mapping[str, Any],
    suffix: str = "",
) -> list[dict[str, Any]]:
    """W15's JSON lines (benchmarks/WORKLOADS.md) from the in-process figures, the client's
    two phases, and what the launcher knows of the server (``server``: its name, version,
    settings and the peak RSS after the runs phase). The added time is taken against the
    in-process ``ainvoke`` (the server runs the agent on its event loop, as ``ainvoke`` does);
    against ``invoke`` it is given too."""
    base, base_cpu = inproc["inprocess_ainvoke_us"], inproc["inprocess_ainvoke_cpu_us"]
    events = runs["events_per_run"]
    n = runs["runs"]
    common = {"server": dict(server), "unit": "run", **inproc}
    wait, stream = runs["wait_us"], runs["stream_us"]
    lines: list[dict[str, Any]] = [
        {
            "workload": "W15_http_wait" + suffix,
            "n": n,
            "seconds": round(wait * n / 1e6, 6),
            "per_op_us": wait,
            "added_us_per_run": round(wait - base, 1),
            "added_us_per_run_vs_invoke": round(wait - inproc["inprocess_invoke_us"], 1),
            "server_cpu_us_per_run": runs.get("server_cpu_wait_us"),
            "server_cpu_raw_us_per_run": runs.get("server_cpu_wait_raw_us"),
            "client_cpu_us_per_run": runs.get("client_cpu_wait_us"),
            "added_cpu_us_per_run": _minus(runs.get("server_cpu_wait_us"), base_cpu),
            "trial_us": runs["wait_trial_us"],
        },
        {
            "workload": "W15_http_stream" + suffix,
            "n": n,
            "seconds": round(stream * n / 1e6, 6),
            "per_op_us": stream,
            "events_per_run": events,
            "event_kinds": runs["event_kinds"],
            "added_us_per_run": round(stream - base, 1),
            "added_us_per_event": round((stream - base) / events, 1),
            "added_us_per_event_vs_invoke": round(
                (stream - inproc["inprocess_invoke_us"]) / events, 1
            ),
            "server_cpu_us_per_run": runs.get("server_cpu_stream_us"),
            "server_cpu_raw_us_per_run": runs.get("server_cpu_stream_raw_us"),
            "client_cpu_us_per_run": runs.get("client_cpu_stream_us"),
            "added_cpu_us_per_event": _per(
                _minus(runs.get("server_cpu_stream_us"), base_cpu), events
            ),
            "trial_us": runs["stream_trial_us"],
        },
    ]
    for line in lines:
        line.update(
            peak_rss_mb=server.get("rss_after_runs_mb"),
            thread_create_us=runs["thread_create_us"],
            sdk_reconnects=runs.get("sdk_reconnects"),
            server_idle_cpu_share=runs.get("server_idle_cpu_share"),
            **common,
        )
    count = streams["streams"]
    lines.append(
        {
            "workload": f"W15_streams_{count}{suffix}",
            "n": count,
            "seconds": streams["wall_s"],
            "per_op_us": round(streams["wall_s"] / count * 1e6, 1),
            "unit": "stream (wall time of all at once / streams)",
            "peak_rss_mb": streams.get("server_peak_rss_mb"),
            "server_cpu_ms_per_stream": _per(streams.get("server_cpu_s"), count / 1e3),
            **{k: v for k, v in streams.items() if k not in ("streams",)},
            "server": dict(server),
        }
    )
    for line in lines:
        print(json.dumps(line), flush=True)
    return lines


def _minus(a: float | None, b: float) -> float | None:
    return None if a is None else round(a - b, 1)


def _per(a: float | None, b: float) -> float | None:
    return None if a is None or not b else round(a / b, 1)
