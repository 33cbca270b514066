"""W16's lines in compare.py's report (ours only: LangGraph has no counterpart to run here)."""

from __future__ import annotations

from typing import Any


def w16_rows(ours: dict[str, dict[str, Any]]) -> list[str]:
    """W16's figures (benchmarks/workers.py), when it ran."""
    scaling = ours.get("W16_scaling")
    if scaling is None:
        return []
    rows = [
        f"- W16 runs/s with 1, 2, 4 workers (--concurrency {scaling.get('concurrency')} each, "
        f"{scaling.get('cpus')} CPUs): {scaling.get('runs_per_s')}; speed-up {scaling.get('speedup')} "
        "(target: 4 workers >= 3x 1)"
    ]
    for name in ("embedded", "queued"):
        got = ours.get(f"W16_first_event_{name}", {})
        rows.append(
            f"- W16 POST runs/stream to the run's first event, {name}: p50 "
            f"{got.get('first_values_p50_ms')} ms, p99 {got.get('first_values_p99_ms')} ms"
        )
    added = ours.get("W16_added_per_run", {})
    if added:
        rows.append(
            "- W16 added per run, queued (1 worker) - embedded, W15's agent (runs.wait): "
            f"{added.get('added_us_per_run_vs_embedded_redis')} us against the Redis saver, "
            f"{added.get('added_us_per_run_vs_embedded_memory')} us against memory; Redis "
            f"round trips per run {added.get('queued_round_trips', {}).get('round_trips_per_run')} "
            f"queued, {added.get('embedded_redis_round_trips', {}).get('round_trips_per_run')} "
            "embedded"
        )
    return rows
