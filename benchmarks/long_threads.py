"""W4D: W4 on the durable savers. What a turn costs on a long thread against a short one.

    python benchmarks/run.py --only W4D

For SQLite (a file in a temporary folder) and Redis (the loopback server run.py starts): the
W4 agent (no tools: a turn is the user's message and the model's answer) builds one thread of
``turns`` turns (2 x turns messages), then ``samples`` rounds each time one turn on a fresh
10-message thread (its fifth turn) and one on the long thread, alternating, so the machine's
drift falls on both alike. ``growth_ratio`` is median long / median short (issue 15's target:
at most 2). ``cold_read_ms`` is one read of the long thread by a saver that holds nothing (a
new process meeting the thread). Ours only: LangGraph's SQLite saver is not in the pinned peer
set, and its Redis saver needs minutes to build a 5,000-message thread.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from checkpoint import RedisSaver, SqliteSaver
from graph_agent import RunnableConfig, UserMessage


def _config(thread: str) -> RunnableConfig:
    return RunnableConfig(thread_id=thread, recursion_limit=10_000)


def _turn(app: Any, thread: str) -> tuple[float, Any]:
    started = time.perf_counter()
    out = app.invoke({"messages": [UserMessage("next")]}, _config(thread))
    return time.perf_counter() - started, out


def w4_durable(
    turns: int,
    samples: int,
    redis_url: str | None,
    make_react: Callable[[int, Any], Any],
    emit: Callable[..., None],
) -> None:
    """``make_react`` and ``emit`` are workloads.py's (passed in: workloads imports this)."""
    folder = Path(tempfile.mkdtemp(prefix="w4d-"))
    savers: list[tuple[str, Callable[..., Any]]] = [
        ("sqlite", lambda **o: SqliteSaver(folder / "w4d.sqlite", **o))
    ]
    if redis_url:
        savers.append(("redis", lambda **o: RedisSaver.from_url(redis_url, key_prefix="w4d", **o)))
    for name, open_saver in savers:
        saver = open_saver()
        app = make_react(0, saver)
        _turn(app, "warm")
        started = time.perf_counter()
        for _ in range(turns):
            _turn(app, "long")
        built = time.perf_counter() - started
        short: list[float] = []
        long: list[float] = []
        for i in range(samples):
            thread = f"short-{i}"
            for _ in range(4):
                _turn(app, thread)
            took, out = _turn(app, thread)
            assert len(out["messages"]) == 10
            short.append(took)
            took, out = _turn(app, "long")
            long.append(took)
        messages = len(out["messages"])
        assert messages == 2 * (turns + samples)
        fresh = open_saver(cache_threads=0)
        started = time.perf_counter()
        state = fresh.get("long")
        cold = time.perf_counter() - started
        assert state is not None and len(state.values["messages"]) == messages
        fresh.close()
        saver.close()
        short_turn, long_turn = statistics.median(short), statistics.median(long)
        emit(
            f"W4_long_{name}",
            samples,
            sum(long),
            unit="turn on the long thread",
            messages=messages,
            short_turn_us=round(short_turn * 1e6, 1),
            long_turn_us=round(long_turn * 1e6, 1),
            growth_ratio=round(long_turn / short_turn, 2),
            cold_read_ms=round(cold * 1e3, 2),
            build_s=round(built, 2),
        )
