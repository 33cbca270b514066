"""W13: what storing finished work as it finishes costs (docs/graph.md, "Finished work is
never done twice"). On a durable saver, a task that finishes while others of its step still
run is stored at once (a pending write of the checkpoint its step started from), and so is
each of an agent's parallel tool calls that finishes while its siblings run. Each shape runs twice on the same saver
kind: as shipped (``durable = True``), and on a subclass that says ``durable = False``, which
writes no progress; the ratio of the two is the cost.

- ``W13_fanout_sqlite``: W6's shape (fan, 8 parallel nodes, join) on a SQLite file.
- ``W13_send_sqlite``: W8's shape with 16 ``Send``s, on a SQLite file.
- ``W13_tools_redis``: a ReactAgent whose model asks for 4 tools at once, then answers, on
  Redis (needs ``BENCH_REDIS_URL``; skipped without it).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from _common import SIZES, cfg, emit, median_trial
from graph_shapes import w6_app

from checkpoint import RedisSaver, SqliteSaver
from graph_agent import (
    END,
    START,
    AssistantMessage,
    KeyStrategy,
    ReactAgent,
    Send,
    StateGraph,
    ToolCall,
    UserMessage,
    tool,
)
from graph_agent.models import ChatResponse, Prompt

__all__ = ["w13_progress"]


_WRITES: dict[str, int] = {}  # thread id -> put_writes calls (the savers below count them)


class _SqliteProgress(SqliteSaver):
    def put_writes(self, checkpoint: Any, *, check_head: bool = True) -> None:
        _WRITES[checkpoint.thread_id] = _WRITES.get(checkpoint.thread_id, 0) + 1
        super().put_writes(checkpoint, check_head=check_head)


class _RedisProgress(RedisSaver):
    def put_writes(self, checkpoint: Any, *, check_head: bool = True) -> None:
        _WRITES[checkpoint.thread_id] = _WRITES.get(checkpoint.thread_id, 0) + 1
        super().put_writes(checkpoint, check_head=check_head)


class _SqliteNoProgress(SqliteSaver):
    durable = False


class _RedisNoProgress(RedisSaver):
    durable = False


def _sends(saver: Any, width: int) -> Any:
    graph = StateGraph(key_strategies={"results": KeyStrategy.APPEND})
    graph.add_node("plan", lambda s: None)
    graph.add_node("work", lambda s: {"results": [s["item"] * 2]})
    graph.add_node("reduce", lambda s: {"total": sum(s["results"])})
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", lambda s: [Send("work", {"item": i}) for i in range(width)])
    graph.add_edge("work", "reduce").add_edge("reduce", END)
    return graph.compile(saver=saver)


def _timed(run: Callable[[int], None], invokes: int) -> tuple[float, dict[str, Any]]:
    run(-1)  # warm up
    results = []
    for trial in range(SIZES["trials"]):
        t0 = time.perf_counter()
        for i in range(invokes):
            run(trial * invokes + i)
        results.append((time.perf_counter() - t0, {}))
    return median_trial(results)


def _pair(
    name: str,
    make: Callable[[bool], Iterator[Any]],
    invoke: Callable[[Any, int], None],
    invokes: int,
    unit: str,
    progress_writes: Callable[[Any], int],
) -> None:
    """Time ``invoke`` on a saver that stores progress and on one that does not."""
    figures: dict[bool, float] = {}
    writes: dict[bool, int] = {}
    for durable in (True, False):
        _WRITES.clear()  # counted per thread id, which both variants use
        for app in make(durable):
            dt, ex = _timed(lambda i, app=app: invoke(app, i), invokes)
            figures[durable] = dt
            writes[durable] = progress_writes(app)
            emit(f"{name}_{'progress' if durable else 'off'}", invokes, dt, unit=unit,
                 progress_writes_per_invoke=writes[durable], **ex)  # fmt: skip
    print(json.dumps({"workload": f"{name}_cost", "ratio_progress_over_off":
                      round(figures[True] / figures[False], 3)}), flush=True)  # fmt: skip


def _progress_in(app: Any, thread: str) -> int:
    """The pending writes stored while the thread's first invoke ran."""
    return _WRITES.get(thread, 0)


def _sqlite_apps(build: Callable[[Any], Any]) -> Callable[[bool], Iterator[Any]]:
    def make(durable: bool) -> Iterator[Any]:
        with tempfile.TemporaryDirectory() as folder:
            kind = _SqliteProgress if durable else _SqliteNoProgress
            with kind(Path(folder) / "bench.sqlite") as saver:
                yield build(saver)

    return make


class _FourTools:
    """Asks for 4 tools at once on a user message; answers after their responses."""

    def call(self, prompt: Prompt) -> ChatResponse:
        if isinstance(prompt.messages[-1], UserMessage):
            calls = tuple(
                ToolCall(id=f"c{i}", name="lookup", arguments=json.dumps({"x": i}))
                for i in range(4)
            )
            return ChatResponse.of(AssistantMessage("", tool_calls=calls), "tool_calls")
        return ChatResponse.of(AssistantMessage("done"), "stop")

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        yield self.call(prompt)

    async def acall(self, prompt: Prompt) -> ChatResponse:
        return self.call(prompt)

    async def astream(self, prompt: Prompt) -> Any:
        yield self.call(prompt)


@tool
def lookup(x: int) -> str:
    """Looks ``x`` up."""
    return f"found {x}"


def w13_progress() -> None:
    width, invokes = 8, SIZES["w13_invokes"]

    def fan(app: Any, i: int) -> None:
        out = app.invoke({"x": 0, "items": []}, cfg(f"f{i}"))
        assert out["x"] == width

    _pair("W13_fanout_sqlite", _sqlite_apps(lambda s: w6_app(width, s)), fan, invokes,
          f"invoke (fan + {width} parallel + join, new thread)",
          lambda app: _progress_in(app, "f0"))  # fmt: skip

    sends = 16

    def send(app: Any, i: int) -> None:
        out = app.invoke({"results": [], "total": 0}, cfg(f"s{i}"))
        assert out["total"] == sum(2 * k for k in range(sends))

    _pair("W13_send_sqlite", _sqlite_apps(lambda s: _sends(s, sends)), send, invokes,
          f"invoke (plan + {sends} Sends + reduce, new thread)",
          lambda app: _progress_in(app, "s0"))  # fmt: skip

    url = os.environ.get("BENCH_REDIS_URL")
    if not url:
        print("# W13_tools_redis skipped: no BENCH_REDIS_URL", flush=True)
        return

    def redis_agents(durable: bool) -> Iterator[Any]:
        import redis

        redis.Redis.from_url(url).flushdb()  # our own throw-away loopback server
        kind = _RedisProgress if durable else _RedisNoProgress
        with kind.from_url(url) as saver:
            yield ReactAgent(name="bench", model=_FourTools(), tools=[lookup], saver=saver)

    def ask(agent: Any, i: int) -> None:
        assert agent.call("look up four things", cfg(f"a{i}")).text == "done"

    _pair("W13_tools_redis", redis_agents, ask, SIZES["w13_agent_turns"],
          "turn (model asks 4 tools at once, tools, model answers; new thread)",
          lambda agent: _progress_in(agent, "a0"))  # fmt: skip
