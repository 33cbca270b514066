"""The workloads of benchmarks/WORKLOADS.md (W1-W6), plus W7-W15, on graph-agent's public API.

Each function runs in its own process (see run.py) and prints JSON lines with the same field
names and correctness asserts as benchmarks/peer_langgraph.py, so the two compare as ratios.
``SIZES`` (in _common.py) holds the workload sizes; ``--smoke`` shrinks them to seconds (no
timing checks). This module has the model workloads (W1-W5); the others live beside it:
W6 (also at widths 64 and 256), W7 (a compiled subgraph as a node) and W8 (``Send`` fan-out)
in benchmarks/graph_shapes.py, with their LangGraph side in benchmarks/peer_extra.py; W9 (the
streaming parser's time per chunk, ours only) in benchmarks/stream_parse.py; W10 (what
tracing adds per model and tool call, ours only) in benchmarks/tracing.py; W4D (W4 on the
durable savers: a turn on a 5,000-message thread against one on a 10-message thread, ours
only) in benchmarks/long_threads.py; W11 (the history of a 1,000-turn thread on SQLite and
Redis, whole and with ``limit=10``) in benchmarks/history.py; W12 (5,000 conversations at once
on one loop: turns/s and the garbage collector's share, ours only) in benchmarks/concurrency.py;
W13 (what storing finished work costs, ours only) in benchmarks/progress.py; W14 (multi-agent
flows, per model call: three agents in sequence and a supervisor over three, against one
agent; LangGraph's side in benchmarks/peer_extra.py) in benchmarks/multi_agent.py; W15 (what
the Agent Protocol server adds to a run, and 1,000 streams at once; LangGraph's side, ``langgraph
dev``, in benchmarks/peer_serving.py) in benchmarks/serving.py; W17C (what
``ContextEditingInterceptor`` adds per model call on a 500-message thread, ours only) in
benchmarks/context_editing.py.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import concurrency
import context_editing
import graph_shapes
import history
import long_threads
import memory_search
import multi_agent
import progress
import protocols
import serving
import stream_parse  # benchmarks/ is on sys.path when run.py runs a workload
import tracing
import workers
from _common import SIZES, cfg, emit, median_trial
from _react import ScriptedModel, make_react

from checkpoint import MemorySaver, RedisSaver
from graph_agent import (
    END,
    START,
    AssistantMessage,
    Prompt,
    StateGraph,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)


def thread_bytes(saver: Any, thread_id: str) -> int:
    return int(saver.stored_bytes(thread_id))


def latest_state_bytes(saver: Any, thread_id: str) -> int:
    checkpoint = saver.get(thread_id)
    return len(saver.serializer.dumps_mapping(checkpoint.values)) if checkpoint else 0


# -- workloads ---------------------------------------------------------------------------------


def w1_linear() -> None:
    nodes, invokes = SIZES["w1_nodes"], SIZES["w1_invokes"]

    def inc(state: Any) -> dict[str, int]:
        return {"x": state["x"] + 1}

    t0 = time.perf_counter()
    graph = StateGraph()
    for i in range(nodes):
        graph.add_node(f"n{i}", inc)
    graph.add_edge(START, "n0")
    for i in range(nodes - 1):
        graph.add_edge(f"n{i}", f"n{i + 1}")
    graph.add_edge(f"n{nodes - 1}", END)
    app = graph.compile()
    compile_s = time.perf_counter() - t0
    assert app.invoke({"x": 0})["x"] == nodes
    results = []
    for _ in range(SIZES["trials"]):
        t0 = time.perf_counter()
        for _ in range(invokes):
            out = app.invoke({"x": 0})
        dt = time.perf_counter() - t0
        assert out["x"] == nodes
        results.append((dt, {}))
    dt, extra = median_trial(results)
    emit("W1_linear", invokes * nodes, dt, unit="node-step", invokes=invokes, nodes=nodes,
         per_invoke_us=round(dt / invokes * 1e6, 1), build_compile_ms=round(compile_s * 1e3, 2), **extra)  # fmt: skip


def _model_floor(k: int, n_messages: int, reps: int = 2000) -> float:
    model = ScriptedModel(k)
    messages: list[Any] = [UserMessage("go")]
    for i in range(n_messages // 2):
        call = ToolCall(id=f"c{i}", name="echo", arguments=json.dumps({"x": i}))
        messages.append(AssistantMessage("", tool_calls=(call,)))
        messages.append(ToolResponseMessage(responses=()))
    prompt = Prompt(messages)
    model.call(prompt)
    t0 = time.perf_counter()
    for _ in range(reps):
        model.call(prompt)
    return (time.perf_counter() - t0) / reps * 1e6


def _react_rounds(
    name: str,
    saver: Any,
    variant: str,
    size_fn: Callable[[str], dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
    trials: int | None = None,
    reps: int | None = None,
) -> None:
    k, reps = SIZES["w2_k"], reps or SIZES["w2_conversations"]
    app = make_react(k, saver, variant)
    out = app.invoke({"messages": [UserMessage("go")]}, cfg(f"{name}-warm"))
    assert sum(isinstance(m, ToolResponseMessage) for m in out["messages"]) == k
    results = []
    for trial in range(trials or SIZES["trials"]):
        t0 = time.perf_counter()
        for r in range(reps):
            out = app.invoke({"messages": [UserMessage("go")]}, cfg(f"{name}-{trial}-{r}"))
        dt = time.perf_counter() - t0
        assert out["messages"][-1].text == f"final answer after {k} tool calls"
        results.append((dt, {}))
    dt, ex = median_trial(results)
    ex.update({"unit": "model+tool round", "conversations": reps, "rounds_per_conversation": k,
               "variant": variant, "per_conversation_ms": round(dt / reps * 1e3, 3),
               "messages_per_thread": len(out["messages"])})  # fmt: skip
    if size_fn:
        ex.update(size_fn(f"{name}-0-{reps - 1}"))
    ex.update(extra or {})
    emit(name, reps * k, dt, **ex)


def w2_react_mem() -> None:
    floor_us = _model_floor(SIZES["w2_k"], 2 * SIZES["w2_k"])
    for variant in ("prebuilt", "handbuilt"):
        saver = MemorySaver()

        def size_fn(tid: str, saver: MemorySaver = saver) -> dict[str, Any]:
            return {"thread_checkpoints": len(list(saver.list(tid))), "thread_total_bytes": thread_bytes(saver, tid),
                    "thread_latest_state_bytes": latest_state_bytes(saver, tid)}  # fmt: skip

        _react_rounds("W2_react_mem" + ("" if variant == "prebuilt" else "_handbuilt"), saver, variant,
                      size_fn=size_fn, extra={"fake_model_invoke_floor_us": round(floor_us, 1)})  # fmt: skip


def _resume(
    name: str,
    make_saver: Callable[[], Any],
    n_threads: int,
    extra: dict[str, Any] | None = None,
    trials: int | None = None,
) -> None:
    results = []
    for trial in range(trials or SIZES["trials"]):
        app = make_react(1, make_saver())
        app.invoke({"messages": [UserMessage("hi")]}, cfg(f"{name}-warm"))
        t0 = time.perf_counter()
        for i in range(n_threads):
            app.invoke({"messages": [UserMessage("hi")]}, cfg(f"tr{trial}-t{i}"))
        t1 = time.perf_counter()
        for i in range(n_threads):
            out = app.invoke({"messages": [UserMessage("again")]}, cfg(f"tr{trial}-t{i}"))
        t2 = time.perf_counter()
        assert len(out["messages"]) == 8, len(out["messages"])
        results.append((t2 - t0, {
            "create_threads_per_s": round(n_threads / (t1 - t0), 1),
            "resume_threads_per_s": round(n_threads / (t2 - t1), 1),
            "create_per_thread_us": round((t1 - t0) / n_threads * 1e6, 1),
            "resume_per_thread_us": round((t2 - t1) / n_threads * 1e6, 1)}))  # fmt: skip
    dt, ex = median_trial(results)
    ex.update({"unit": "thread-invoke (create+resume)", "threads": n_threads,
               "threads_per_s_overall": round(n_threads / dt, 1), **(extra or {})})  # fmt: skip
    emit(name, 2 * n_threads, dt, **ex)


def w3_resume() -> None:
    _resume("W3_resume", MemorySaver, SIZES["w3_threads"])


def w4_history() -> None:
    for variant in ("prebuilt", "handbuilt"):
        _history("W4_history" + ("" if variant == "prebuilt" else "_handbuilt"), variant)


def _history(name: str, variant: str) -> None:
    turns = SIZES["w4_turns"]
    results = []
    for trial in range(SIZES["trials"]):
        saver = MemorySaver()
        app = make_react(0, saver, variant)
        app.invoke({"messages": [UserMessage("warm")]}, cfg("warm"))
        times, totals, latest = [], [], []
        tid = f"hist{trial}"
        for t in range(turns):
            t0 = time.perf_counter()
            out = app.invoke({"messages": [UserMessage(f"turn {t}")]}, cfg(tid))
            times.append(time.perf_counter() - t0)
            totals.append(thread_bytes(saver, tid))  # accounting outside the timed region
            if t < 10 or t >= turns - 10:
                latest.append(latest_state_bytes(saver, tid))
        assert len(out["messages"]) == 2 * turns
        assert len(app.get_state(cfg(tid)).values["messages"]) == 2 * turns
        first, last = statistics.median(times[:10]), statistics.median(times[-10:])
        deltas = [totals[0]] + [totals[i] - totals[i - 1] for i in range(1, turns)]
        results.append((sum(times), {
            "variant": variant,
            "turn1_10_median_us": round(first * 1e6, 1),
            "turn191_200_median_us": round(last * 1e6, 1),
            "growth_ratio": round(last / first, 2),
            "turn1_10_mean_us": round(sum(times[:10]) / 10 * 1e6, 1),
            "turn191_200_mean_us": round(sum(times[-10:]) / 10 * 1e6, 1),
            "bytes_per_turn_1_10": round(sum(deltas[:10]) / 10),
            "bytes_per_turn_191_200": round(sum(deltas[-10:]) / 10),
            "latest_state_bytes_turn10": latest[9],
            "latest_state_bytes_turn200": latest[-1],
            "thread_total_bytes_end": totals[-1],
            "checkpoints_end": len(list(saver.list(tid)))}))  # fmt: skip
    dt, ex = median_trial(results)
    ex["growth_ratio_all_trials"] = [r[1]["growth_ratio"] for r in results]
    emit(name, turns, dt, unit="turn", **ex)


# -- Redis -------------------------------------------------------------------------------------


def _server_desc(url: str) -> str:
    import redis

    info = redis.Redis.from_url(url).info("server")
    version = info.get("valkey_version") or info.get("redis_version")
    return f"{info.get('server_name', 'redis')} {version} (no modules)"


def _raw_floor(name: str, url: str, desc: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    value, pairs = os.urandom(4096), SIZES["w5_floor_pairs"]
    for i in range(min(200, pairs)):
        client.set(f"bench:k{i}", value)
        client.get(f"bench:k{i}")
    t0 = time.perf_counter()
    for i in range(pairs):
        client.set(f"bench:k{i}", value)
        assert client.get(f"bench:k{i}") is not None
    dt = time.perf_counter() - t0
    emit(
        name + "_nopipe",
        pairs,
        dt,
        unit="SET+GET pair (2 round trips)",
        pairs_per_s=round(pairs / dt, 1),
        value_bytes=4096,
        server=desc,
    )
    batch, batches = 100, max(1, pairs // 25)
    t0 = time.perf_counter()
    for b in range(batches):
        pipe = client.pipeline(transaction=False)
        for j in range(batch):
            key = f"bench:k{(b * batch + j) % pairs}"
            pipe.set(key, value)
            pipe.get(key)
        replies = pipe.execute()
    dt = time.perf_counter() - t0
    assert replies[-1] is not None
    emit(name + "_pipe", batch * batches, dt, unit="SET+GET pair (pipelined, 100 pairs/batch)",
         pairs_per_s=round(batch * batches / dt, 1), value_bytes=4096, server=desc)  # fmt: skip
    client.delete(*[f"bench:k{i}" for i in range(pairs)])


def _redis_saver(url: str) -> RedisSaver:
    import redis

    redis.Redis.from_url(url).flushdb()  # our own throw-away loopback server
    return RedisSaver.from_url(url)


def w5_redis() -> None:
    import redis

    url = os.environ["BENCH_REDIS_URL"]
    desc = _server_desc(url)
    t0 = time.perf_counter()
    try:
        probe = make_react(1, _redis_saver(url))
        probe.invoke({"messages": [UserMessage("hi")]}, cfg("probe"))
        print(
            json.dumps(
                {
                    "workload": "W5_saver_probe_plain",
                    "server": desc,
                    "works": True,
                    "seconds": round(time.perf_counter() - t0, 4),
                }
            ),
            flush=True,
        )
    except Exception as error:
        print(
            json.dumps(
                {
                    "workload": "W5_saver_probe_plain",
                    "server": desc,
                    "works": False,
                    "error_type": type(error).__name__,
                    "error": str(error)[:400],
                }
            ),
            flush=True,
        )
    _raw_floor("W5_raw_floor_plain", url, desc)
    client = redis.Redis.from_url(url)
    saver = _redis_saver(url)

    def size_fn(tid: str) -> dict[str, Any]:
        return {
            "thread_keys": len(saver.keys(tid)),
            "thread_memory_usage_bytes": saver.stored_bytes(tid),
        }

    _react_rounds("W5_react_redis", saver, "prebuilt", size_fn=size_fn, reps=SIZES["w5_conversations"],
                  extra={"server": desc})  # fmt: skip
    # Round trips of one conversation: one EVALSHA reads the thread, one per checkpoint write.
    app = make_react(SIZES["w2_k"], saver)
    client.config_resetstat()
    app.invoke({"messages": [UserMessage("go")]}, cfg("round-trips"))
    stats = client.info("commandstats")
    commands = {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}
    scripts = commands.get("evalsha", 0)
    writes = sum(1 for _ in saver.list("round-trips"))
    print(json.dumps({"workload": "W5_round_trips", "evalsha_calls": scripts, "checkpoint_writes": writes,
                      "round_trips_per_checkpoint_write": round((scripts - 1) / writes, 3)}), flush=True)  # fmt: skip
    _resume(
        "W5_resume_redis",
        lambda: _redis_saver(url),
        SIZES["w5_threads"],
        extra={"server": desc},
        trials=1,
    )


WORKLOADS: dict[str, Callable[[], None]] = {
    "W1": w1_linear,
    "W2": w2_react_mem,
    "W3": w3_resume,
    "W4": w4_history,
    "W5": w5_redis,
    "W6": graph_shapes.w6_fanout,
    "W7": graph_shapes.w7_subgraph,
    "W8": graph_shapes.w8_send,
    "W9": lambda: stream_parse.w9_stream_parse(SIZES["w9_repeats"]),
    "W4D": lambda: long_threads.w4_durable(
        SIZES["w4d_turns"],
        SIZES["w4d_samples"],
        os.environ.get("BENCH_REDIS_URL"),
        make_react,
        emit,
    ),
    "W11": lambda: history.w11_history(
        SIZES["w11_turns"],
        SIZES["w11_trials"],
        os.environ.get("BENCH_REDIS_URL"),
        make_react,
        emit,
    ),
    "W13": progress.w13_progress,
    "W14": multi_agent.w14_multi_agent,
    "W15": serving.w15_serving,
    "W16": workers.w16_workers,
    "W18": protocols.w18_protocols,
    "W12": lambda: concurrency.w12_many_conversations(SIZES["w12_conversations"], make_react, emit),
    "W17": lambda: memory_search.w17_store(SIZES["w17_items"], emit),
    "W17C": lambda: context_editing.w17_context_editing(
        SIZES["w17c_calls"], SIZES["w17c_rounds"], emit
    ),
    "W10": lambda: tracing.w10_tracing(
        SIZES["w2_k"], SIZES["w2_conversations"], SIZES["w10_rounds"], make_react, emit
    ),
}
