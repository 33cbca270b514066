"""Round trips to Redis, counted with ``MONITOR`` (W16, benchmarks/workers.py): every command a
client sent, apart from those a Lua script ran inside the server (``INFO commandstats`` counts
those too), grouped by what they are for (the key's prefix)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import redis

__all__ = ["count_round_trips"]

# by key prefix; the saver's keys are graph_agent:{thread}:..., the runs service's
# graph-agent:runs:KIND:..., docket's graph-agent:... (its name, "graph-agent")
STORE_KINDS = ("run", "thread", "thread-runs", "threads", "active", "cancel", "cancels")


def _group(command: str) -> str:
    parts = command.split()
    name = parts[0].strip('"').upper() if parts else ""
    key = parts[1].strip('"') if len(parts) > 1 else ""
    if name in ("EVALSHA", "EVAL") and len(parts) > 3:
        key = parts[3].strip('"')
    if name == "XREAD":
        return "run events (reads)"
    if name == "XREADGROUP":
        return "queue (docket)"
    if key.startswith("graph_agent:{"):
        return "thread lease" if key.endswith(":lease") else "checkpoints (saver)"
    if key.startswith("graph-agent:runs:"):
        kind = key.split(":")[2]
        if kind == "events":
            return "run events (writes)"
        if kind in STORE_KINDS:
            return "run and thread records"
    if key.startswith("graph-agent:"):
        return "queue (docket)"
    return "other"


class _Watch:
    """Collects the commands clients send to ``url`` from the moment it starts."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.seen: Counter[str] = Counter()
        self.inside: int = 0
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with redis.Redis.from_url(self.url) as client, client.monitor() as monitor:
            self.ready.set()
            for command in monitor.listen():
                if self.stop.is_set():
                    return
                if command.get("client_type") == "lua":
                    self.inside += 1
                elif "PING" not in command["command"][:8]:
                    self.seen[_group(command["command"])] += 1

    def __enter__(self) -> _Watch:
        self.thread.start()
        self.ready.wait(10)
        time.sleep(0.05)  # MONITOR is registered once its OK is read
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        with redis.Redis.from_url(self.url) as client:
            client.ping()  # wakes the monitor up to see the stop
        self.thread.join(10)


def count_round_trips(url: str, runs: int, run: Callable[[int], None]) -> dict[str, Any]:
    """Round trips per ``run(i)`` (``runs`` of them, one after another), by group, less what
    the processes send while idle (measured over a second before, per second of the runs)."""
    with _Watch(url) as idle:
        t0 = time.perf_counter()
        time.sleep(1.0)
        idle_s = time.perf_counter() - t0
    with _Watch(url) as busy:
        t0 = time.perf_counter()
        for i in range(runs):
            run(i)
        busy_s = time.perf_counter() - t0
    rate = busy_s / idle_s
    groups = {k: round((v - idle.seen.get(k, 0) * rate) / runs, 1) for k, v in busy.seen.items()}
    groups = {k: v for k, v in sorted(groups.items(), key=lambda kv: -kv[1]) if v >= 0.05}
    return {
        "round_trips_per_run": round(sum(groups.values()), 1),
        "round_trips_by_group": groups,
        "commands_in_scripts_per_run": round((busy.inside - idle.inside * rate) / runs, 1),
        "idle_round_trips_per_s": round(sum(idle.seen.values()) / idle_s, 1),
    }
