"""What every workload shares: the sizes (``--smoke`` shrinks them), the JSON line each
measurement prints, the median of trials, and the run config."""

from __future__ import annotations

import json
import resource
from typing import Any

from graph_agent import RunnableConfig

__all__ = ["SIZES", "SMOKE", "cfg", "emit", "median_trial", "peak_rss_mb"]

SIZES: dict[str, int] = {
    "trials": 3,
    "w1_invokes": 200,
    "w1_nodes": 100,
    "w2_conversations": 25,
    "w2_k": 20,
    "w3_threads": 1000,
    "w4_turns": 200,
    "w4d_turns": 2500,
    "w4d_samples": 20,
    "w11_turns": 1000,
    "w11_trials": 5,
    "w12_conversations": 5000,
    "w5_floor_pairs": 5000,
    "w5_conversations": 25,
    "w5_threads": 1000,
    "w6_invokes": 200,
    "w6_64_invokes": 200,
    "w6_256_invokes": 100,
    "w7_invokes": 200,
    "w8_invokes": 50,
    "w8_width": 256,
    "w9_repeats": 60,
    "w10_rounds": 12,
    "w13_invokes": 100,
    "w13_agent_turns": 100,
    "w14_model_calls": 600,
    "w14_trials": 7,
    "w15_smoke": 0,  # W15's sizes are benchmarks/_serving.py's (shared with LangGraph's side)
    "w16_smoke": 0,  # W16's sizes are benchmarks/workers.py's
    "w17_items": 10_000,
    "w17c_calls": 200,
    "w17c_rounds": 7,
}
SMOKE = {
    "trials": 1, "w1_invokes": 3, "w1_nodes": 10, "w2_conversations": 2, "w2_k": 3,
    "w3_threads": 5, "w4_turns": 24, "w4d_turns": 10, "w4d_samples": 2, "w11_turns": 10, "w11_trials": 1, "w12_conversations": 20, "w5_floor_pairs": 50, "w5_conversations": 2,
    "w5_threads": 5, "w6_invokes": 5, "w6_64_invokes": 2, "w6_256_invokes": 2, "w7_invokes": 3,
    "w8_invokes": 2, "w8_width": 16,
    "w9_repeats": 2, "w10_rounds": 1, "w13_invokes": 3, "w13_agent_turns": 3,
    "w14_model_calls": 10,
    "w14_trials": 1,
    "w15_smoke": 1,
    "w16_smoke": 1,
    "w17_items": 50,
    "w17c_calls": 2,
    "w17c_rounds": 1,
}  # fmt: skip


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def emit(workload: str, n: int, seconds: float, **extra: Any) -> None:
    record = {
        "workload": workload,
        "n": n,
        "seconds": round(seconds, 6),
        "per_op_us": round(seconds / n * 1e6, 3) if n else None,
        "peak_rss_mb": peak_rss_mb(),
    }
    record.update(extra)
    print(json.dumps(record), flush=True)


def median_trial(results: list[tuple[float, dict[str, Any]]]) -> tuple[float, dict[str, Any]]:
    ordered = sorted(results, key=lambda r: r[0])
    seconds, extra = ordered[len(ordered) // 2]
    extra = dict(extra)
    extra["trials"] = len(results)
    extra["trial_seconds"] = [round(r[0], 4) for r in results]
    return seconds, extra


def cfg(thread_id: str) -> RunnableConfig:
    return RunnableConfig(thread_id=thread_id, recursion_limit=10_000)
