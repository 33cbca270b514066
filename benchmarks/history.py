"""W11: the history of a 1,000-turn thread on the durable savers.

    python benchmarks/run.py --only W11

For SQLite (a file in a temporary folder) and Redis (the loopback server run.py starts): the
W4 agent (no tools: a turn is the user's message and the model's answer, two checkpoints)
builds one thread of ``turns`` turns, then a saver that holds nothing (a new process meeting
the thread) reads ``get_state_history`` over the whole thread, and then with ``limit=10``,
alternately, ``trials`` times each; the medians are reported. Issue 15's target: under 1 s
for the whole history of 1,000 turns on both savers. ``decodes`` counts the serializer's
``loads`` calls of one whole-history read (linear: about one per stored item and checkpoint).
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


def _history(app: Any, limit: int | None) -> tuple[float, list[Any]]:
    started = time.perf_counter()
    snapshots = list(app.get_state_history(_config("long"), limit=limit))
    return time.perf_counter() - started, snapshots


def _decodes(app: Any, saver: Any) -> int:
    """The serializer's ``loads`` calls of one whole-history read (untimed)."""
    loads = saver.serializer.loads
    calls = 0

    def counting(data: bytes, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return loads(data, *args, **kwargs)

    saver.serializer.loads = counting
    try:
        _history(app, None)
    finally:
        del saver.serializer.loads
    return calls


def w11_history(
    turns: int,
    trials: int,
    redis_url: str | None,
    make_react: Callable[[int, Any], Any],
    emit: Callable[..., None],
) -> None:
    """``make_react`` and ``emit`` are workloads.py's (passed in: workloads imports this)."""
    folder = Path(tempfile.mkdtemp(prefix="w11-"))
    savers: list[tuple[str, Callable[[], Any]]] = [
        ("sqlite", lambda: SqliteSaver(folder / "w11.sqlite"))
    ]
    if redis_url:
        savers.append(("redis", lambda: RedisSaver.from_url(redis_url, key_prefix="w11")))
    for name, open_saver in savers:
        writer = open_saver()
        app = make_react(0, writer)
        if name == "redis":
            writer.delete_thread("long")
        started = time.perf_counter()
        for _ in range(turns):
            app.invoke({"messages": [UserMessage("next")]}, _config("long"))
        built = time.perf_counter() - started
        writer.close()
        reader = open_saver()  # holds nothing of the thread
        app = make_react(0, reader)
        whole: list[float] = []
        limited: list[float] = []
        for _ in range(trials):
            took, snapshots = _history(app, None)
            whole.append(took)
            assert len(snapshots) == 2 * turns, len(snapshots)  # per turn: its input, the answer
            assert len(snapshots[0].values["messages"]) == 2 * turns
            took, snapshots = _history(app, 10)
            limited.append(took)
            assert len(snapshots) == 10
        calls = _decodes(app, reader)
        reader.close()
        median = statistics.median(whole)
        emit(
            f"W11_history_{name}",
            2 * turns,
            median,
            unit="checkpoint listed (whole history)",
            turns=turns,
            history_s=round(median, 4),
            limit10_ms=round(statistics.median(limited) * 1e3, 3),
            trial_seconds=[round(t, 4) for t in whole],
            trial_limit10_ms=[round(t * 1e3, 3) for t in limited],
            decodes=calls,
            build_s=round(built, 2),
        )
