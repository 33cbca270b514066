"""W6 (fan-out and join, at widths 8, 64 and 256), W7 (a compiled subgraph as a node) and W8
(``Send`` fan-out to 256): the graph shapes, without a model. LangGraph's side of W6 at 64 and
256, W7 and W8 is benchmarks/peer_extra.py."""

from __future__ import annotations

import time
from typing import Any

from _common import SIZES, cfg, emit, median_trial

from checkpoint import MemorySaver
from graph_agent import END, START, KeyStrategy, RunnableConfig, StateGraph

__all__ = ["w6_fanout", "w7_subgraph", "w8_send"]


def w6_app(width: int, saver: Any = None) -> Any:
    """W6's graph: ``fan``, ``width`` parallel nodes, ``join`` (W13 runs it on a saver)."""
    graph = StateGraph(key_strategies={"items": KeyStrategy.APPEND})
    graph.add_node("fan", lambda s: {"x": s["x"] + 1})
    for i in range(width):
        graph.add_node(f"w{i}", lambda s, i=i: {"items": [i]})
        graph.add_edge("fan", f"w{i}").add_edge(f"w{i}", "join")
    graph.add_node("join", lambda s: {"x": len(s["items"])})
    graph.add_edge(START, "fan").add_edge("join", END)
    return graph.compile(saver=saver)


def _w6_time(width: int, invokes: int) -> tuple[float, dict[str, Any]]:
    app = w6_app(width)
    out = app.invoke({"x": 0, "items": []})
    assert out["x"] == width and sorted(out["items"]) == list(range(width))
    results = []
    for _ in range(SIZES["trials"]):
        t0 = time.perf_counter()
        for _ in range(invokes):
            out = app.invoke({"x": 0, "items": []})
        dt = time.perf_counter() - t0
        assert out["x"] == width and len(out["items"]) == width
        results.append((dt, {}))
    return median_trial(results)


def w6_fanout() -> None:
    """W6 at width 8 (``W6_fanout``, the shared spec), then at 64 and 256 (``W6_fanout_64``,
    ``W6_fanout_256``: one op is a task, width + 2 per invoke; LangGraph's side is in
    peer_extra.py). Each width builds its own graph; the narrow one runs first, so its peak
    RSS is its own."""
    width, invokes = 8, SIZES["w6_invokes"]
    dt, ex = _w6_time(width, invokes)
    emit("W6_fanout", invokes, dt, unit="invoke (fan + 8 parallel + join)",
         per_node_step_us=round(dt / (invokes * (width + 2)) * 1e6, 2), **ex)  # fmt: skip
    for width, invokes in ((64, SIZES["w6_64_invokes"]), (256, SIZES["w6_256_invokes"])):
        dt, ex = _w6_time(width, invokes)
        tasks = invokes * (width + 2)
        emit(f"W6_fanout_{width}", tasks, dt, unit=f"task (fan + {width} parallel + join per invoke)",
             invokes=invokes, width=width, per_task_us=round(dt / tasks * 1e6, 2),
             per_invoke_us=round(dt / invokes * 1e6, 1), **ex)  # fmt: skip


W7_NODES, W7_SUB_AT, W7_SUB_NODES = 20, 9, 3  # node n9 (the 10th) is the 3-node child graph


def _w7(name: str, saver: MemorySaver | None) -> None:
    invokes = SIZES["w7_invokes"]
    final = W7_NODES - 1 + W7_SUB_NODES
    steps = W7_NODES + W7_SUB_NODES  # 19 plain + the subgraph node + 3 inner = 23

    def inc(state: Any) -> dict[str, int]:
        return {"x": state["x"] + 1}

    t0 = time.perf_counter()
    child = StateGraph()
    for j in range(W7_SUB_NODES):
        child.add_node(f"s{j}", inc)
    child.add_edge(START, "s0").add_edge(f"s{W7_SUB_NODES - 1}", END)
    for j in range(W7_SUB_NODES - 1):
        child.add_edge(f"s{j}", f"s{j + 1}")
    sub = child.compile()
    graph = StateGraph()
    for i in range(W7_NODES):
        graph.add_node(f"n{i}", sub if i == W7_SUB_AT else inc)
    graph.add_edge(START, "n0").add_edge(f"n{W7_NODES - 1}", END)
    for i in range(W7_NODES - 1):
        graph.add_edge(f"n{i}", f"n{i + 1}")
    app = graph.compile(saver=saver)
    compile_s = time.perf_counter() - t0

    def config(tid: str) -> RunnableConfig | None:
        return cfg(tid) if saver is not None else None

    assert app.invoke({"x": 0}, config(f"{name}-warm"))["x"] == final
    results = []
    for trial in range(SIZES["trials"]):
        t0 = time.perf_counter()
        for i in range(invokes):
            out = app.invoke({"x": 0}, config(f"{name}-{trial}-{i}"))  # a new thread each
        dt = time.perf_counter() - t0
        assert out["x"] == final, out
        results.append((dt, {}))
    dt, ex = median_trial(results)
    emit(name, invokes * steps, dt,
         unit=f"node step ({W7_NODES - 1} plain + 1 subgraph node + {W7_SUB_NODES} inner = {steps} per invoke)",
         invokes=invokes, steps_per_invoke=steps, checkpointer=type(saver).__name__ if saver else None,
         per_invoke_us=round(dt / invokes * 1e6, 1), build_compile_ms=round(compile_s * 1e3, 2), **ex)  # fmt: skip


def w7_subgraph() -> None:
    _w7("W7_subgraph", None)
    _w7("W7_subgraph_mem", MemorySaver())


def w8_send() -> None:
    from graph_agent import Send

    width, invokes = SIZES["w8_width"], SIZES["w8_invokes"]
    total = sum(2 * i for i in range(width))
    graph = StateGraph(key_strategies={"items": KeyStrategy.APPEND, "results": KeyStrategy.APPEND})
    graph.add_node("plan", lambda s: {"items": list(range(width))})
    graph.add_node("work", lambda s: {"results": [s["item"] * 2]})
    graph.add_node("reduce", lambda s: {"total": sum(s["results"])})
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", lambda s: [Send("work", {"item": i}) for i in s["items"]])
    graph.add_edge("work", "reduce").add_edge("reduce", END)
    app = graph.compile()

    def check(out: Any) -> None:
        assert len(out["results"]) == width, len(out["results"])
        assert out["total"] == total and sorted(out["results"]) == [2 * i for i in range(width)]

    check(app.invoke({"items": [], "results": [], "total": 0}))
    results = []
    for _ in range(SIZES["trials"]):
        t0 = time.perf_counter()
        for _ in range(invokes):
            out = app.invoke({"items": [], "results": [], "total": 0})
        dt = time.perf_counter() - t0
        check(out)
        results.append((dt, {}))
    dt, ex = median_trial(results)
    emit("W8_send", invokes * width, dt, unit=f"Send task (plan + {width} Sends + reduce per invoke)",
         invokes=invokes, sends_per_invoke=width, per_invoke_us=round(dt / invokes * 1e6, 1), **ex)  # fmt: skip
