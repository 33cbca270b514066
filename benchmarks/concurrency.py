"""W12: many conversations at once on one event loop, and the garbage collector's share.

    python benchmarks/run.py --only W12

``conversations`` (5,000) turns start together with ``asyncio.gather`` on one loop, each on a
thread of its own, on one agent and one MemorySaver: the W2 agent with one tool call per turn
(a turn: the user's message, a model call asking for the tool, the tool, the final answer).
Reported: turns per second (wall clock), and the share of the process's CPU time spent in the
garbage collector (timed with ``gc.callbacks``; thresholds left at Python's defaults, no
``gc.freeze``), with the collections of each generation; and the objects the collector tracks
per turn while a thousand turns wait on an async tool, or on a sync one in the worker threads
(``waiting.py``), which decide how many collections such a load pays. Ours only.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from typing import Any

from waiting import TURNS, tracked_per_waiting_turn

from checkpoint import MemorySaver
from graph_agent import RunnableConfig, UserMessage


def w12_many_conversations(
    conversations: int,
    make_react: Callable[[int, Any], Any],
    emit: Callable[..., None],
) -> None:
    """``make_react`` and ``emit`` are workloads.py's (passed in: workloads imports this)."""
    in_gc = [0.0]
    started = [0.0]

    def timing(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            in_gc[0] += time.perf_counter() - started[0]

    async def turns() -> tuple[float, float, list[int]]:
        app = make_react(1, MemorySaver())
        await app.ainvoke({"messages": [UserMessage("go")]}, RunnableConfig(thread_id="warm"))
        gc.collect()
        before = [s["collections"] for s in gc.get_stats()]
        gc.callbacks.append(timing)
        try:
            wall, cpu = time.perf_counter(), time.process_time()
            outs = await asyncio.gather(
                *(
                    app.ainvoke(
                        {"messages": [UserMessage("go")]}, RunnableConfig(thread_id=f"c{i}")
                    )
                    for i in range(conversations)
                )
            )
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        finally:
            gc.callbacks.remove(timing)
        assert all(len(out["messages"]) == 4 for out in outs)
        collections = [s["collections"] - b for s, b in zip(gc.get_stats(), before)]
        return wall, cpu, collections

    wall, cpu, collections = asyncio.run(turns())
    waiting = min(TURNS, conversations)
    tracked = {
        kind: round(tracked_per_waiting_turn(is_async, waiting), 1)
        for kind, is_async in (("async_tool", True), ("sync_tool", False))
    }
    emit(
        "W12_many_conversations",
        conversations,
        wall,
        unit="turn (one tool call), all at once on one loop",
        turns_per_s=round(conversations / wall, 1),
        gc_share_of_cpu=round(in_gc[0] / cpu, 3),
        gc_collections=collections,
        cpu_s=round(cpu, 3),
        tracked_objects_per_waiting_turn=tracked,
    )
