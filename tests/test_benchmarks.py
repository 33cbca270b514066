"""The benchmark suite still runs (tiny sizes, no timing checks): a smoke test against rot."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIELDS = {"workload", "n", "seconds", "per_op_us", "peak_rss_mb"}


def _query_engine() -> bool:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from _servers import query_engine_server
    finally:
        sys.path.pop(0)
    return query_engine_server(sys.executable) is not None


def test_every_workload_runs_and_prints_the_peer_fields(tmp_path: Path) -> None:
    out = tmp_path / "smoke.jsonl"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--smoke", "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = {r["workload"]: r for r in map(json.loads, out.read_text().splitlines())}
    expected = {"W1_linear", "W2_react_mem", "W2_react_mem_handbuilt", "W3_resume", "W4_history",
                "W4_history_handbuilt", "W6_fanout", "W6_fanout_64", "W6_fanout_256", "W7_subgraph", "W7_subgraph_mem", "W8_send",
                "W9_stream_parse", "W9_stream_parse_merge", "W11_history_sqlite",
                "W14_single", "W14_sequential", "W14_supervisor",
                "W17_search_memory", "W17_search_sqlite",
                # W18: one served agent over every protocol (the a2a and mcp extras: make test)
                "W18_ap_wait", "W18_ap_stream", "W18_a2a_send", "W18_a2a_stream", "W18_mcp_call",
                "W18_mcp_call_asking", "W18_mcp_call_modern", "W18_agui"}  # fmt: skip
    has_redis = bool(
        os.environ.get("REDIS_SERVER")
        or shutil.which("redis-server")
        or shutil.which("valkey-server")
    )
    if has_redis or os.environ.get("CI"):
        expected |= {
            "W5_saver_probe_plain",
            "W5_raw_floor_plain_nopipe",
            "W5_react_redis",
            "W5_round_trips",
            "W5_resume_redis",
            "W11_history_redis",
            # W16: serve --queue and a worker (benchmarks/workers.py), on redis-servers of its own
            "W16_workers_1",
            "W16_scaling",
            "W16_first_event_embedded",
            "W16_first_event_queued",
            "W16_added_per_run",
            "W17_search_redis",
        }
    if os.environ.get("CI") or _query_engine():
        expected.add("W17_search_redis_qe")  # W17 on RediSearch (the dev extra's wheel)
    assert expected <= set(records), expected - set(records)
    for name in expected - {"W5_saver_probe_plain", "W5_round_trips"}:
        assert set(records[name]) >= FIELDS, name
    if "W5_saver_probe_plain" in records:
        assert records["W5_saver_probe_plain"]["works"] is True
        assert records["W5_round_trips"]["round_trips_per_checkpoint_write"] == 1.0
    assert (
        records["W4_history"]["bytes_per_turn_191_200"]
        <= 1.5 * records["W4_history"]["bytes_per_turn_1_10"]
    )
    # W11 reads the history linearly: per checkpoint its header, index and a value or two,
    # and each of the thread's messages once (not once per checkpoint that holds it)
    for name in {"W11_history_sqlite", "W11_history_redis"} & set(records):
        assert records[name]["decodes"] <= 5 * records[name]["n"], records[name]
    assert records["W7_subgraph"]["steps_per_invoke"] == 23
    for name in (
        "W18_a2a_send",
        "W18_a2a_stream",
        "W18_mcp_call",
        "W18_mcp_call_modern",
        "W18_agui",
    ):
        assert records[name]["vs_agent_protocol"] is not None, records[name]
    for name in {n for n in records if n.startswith("W17_search_")}:
        assert records[name]["p99_us"] >= records[name]["per_op_us"] > 0, records[name]
    for width in (64, 256):
        wide = records[f"W6_fanout_{width}"]
        assert wide["width"] == width and wide["n"] == wide["invokes"] * (width + 2)
        assert wide["per_task_us"] == pytest.approx(wide["per_op_us"], abs=0.01)
    assert (
        records["W8_send"]["n"]
        == records["W8_send"]["invokes"] * records["W8_send"]["sends_per_invoke"]
    )
    # W14: one op is a model call; the flows make theirs through three agents
    for name, calls in {"W14_single": 2, "W14_sequential": 6, "W14_supervisor": 10}.items():
        record = records[name]
        assert record["model_calls_per_invoke"] == calls, record
        assert record["n"] == record["invokes"] * calls, record
    if "W16_workers_1" in records:  # every run it made was checked; the figures are there
        assert records["W16_workers_1"]["runs_per_s"] > 0
        for name in ("W16_first_event_embedded", "W16_first_event_queued"):
            assert 0 < records[name]["first_values_p50_ms"] <= records[name]["end_p50_ms"]
        assert records["W16_added_per_run"]["queued_round_trips"]["round_trips_per_run"] > 0
    assert "W1_linear" in done.stdout  # the table
    assert "machine: " in done.stdout and "CPUs" in done.stdout  # what the figures depend on


def test_the_machine_line_names_the_idle_policy_that_sets_a_round_trips_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    _machine = importlib.import_module("_machine")  # benchmarks/ is not a package

    driver, poll = tmp_path / "current_driver", tmp_path / "guest_halt_poll_ns"
    monkeypatch.setattr(_machine, "CPUIDLE_DRIVER", driver)
    monkeypatch.setattr(_machine, "HALT_POLL_NS", poll)
    assert _machine.describe() == f"{os.cpu_count()} CPUs"  # no cpuidle: nothing to say
    driver.write_text("haltpoll\n")
    poll.write_text("0\n")
    assert "guest_halt_poll_ns=0 (halt polling off" in _machine.describe()
    poll.write_text("200000\n")
    assert _machine.describe().endswith("cpuidle driver haltpoll, guest_halt_poll_ns=200000")
    driver.write_text("intel_idle\n")
    assert _machine.describe().endswith("cpuidle driver intel_idle")
