#!/usr/bin/env python3
"""LangGraph's side of W6 at widths 64 and 256, W7 (subgraph), W8 (Send fan-out), W11
(history of a long thread) and W14 (multi-agent flows), beside benchmarks/peer_langgraph.py.

    .venv-peer/bin/python benchmarks/peer_extra.py [--only W6W,W7,W8,W11,W14] [--out FILE] [--trials 3]
        [--redis-modules redis://127.0.0.1:6392]

Same rules and JSON lines as peer_langgraph.py (benchmarks/WORKLOADS.md): each workload runs
in a fresh subprocess (``--child NAME``) for its own peak RSS; construction, compilation and
one warm-up invoke are outside the timed loop; 3 trials, the median one is reported; the
correctness asserts follow the timed loop. The workloads (ours: benchmarks/graph_shapes.py):

W6W fan-out widths: W6 (``{x: int, items: list (+)}``; ``fan`` (x+1) -> ``w0..w{N-1}``,
``wi`` returns items=[i] -> ``join``, which waits for all of them and sets x = len(items))
at N = 64 (100 invokes) and N = 256 (25 invokes); one op is a task, N + 2 per invoke, so
``per_op_us`` = ``per_task_us``. ``W6_fanout`` (N = 8) stays in peer_langgraph.py.

W7 subgraph: ``{x: int}``; a 20-node chain, node 10 is a compiled 3-node child graph (each
x+1, sharing ``x``), the other 19 do x+1; 200 invokes, final x == 22. One op is a node step:
the 19 plain nodes, the subgraph node itself and its 3 inner nodes, 23 per invoke.
``W7_subgraph`` runs without a checkpointer, ``W7_subgraph_mem`` with ``InMemorySaver`` (each
invoke on a new thread; the child inherits the parent's checkpointer).

W8 send: ``{items: list (+), results: list (+), total: int}``; ``plan`` returns items
0..255, a conditional edge sends ``Send("work", {"item": i})`` for each, ``work`` returns
results=[2 * item], ``work -> reduce`` sets total = sum(results); 50 invokes, one op is a Send
task (50 x 256).

W11 history: ``StateGraph(MessagesState)`` with one node that answers with an ``AIMessage``; a
turn is one ``HumanMessage`` and that answer. 1,000 turns on one thread of LangGraph's
``RedisSaver`` (``langgraph-checkpoint-redis``: needs RediSearch + RedisJSON, the
``--redis-modules`` server; skipped without one), then ``get_state_history`` of the whole
thread and with ``limit=10``, alternately, ``--trials`` times; medians reported as
``history_s`` and ``limit10_ms`` (ours: benchmarks/history.py). LangGraph's SQLite saver
(``langgraph-checkpoint-sqlite``) is not in the pinned peer set, so there is no SQLite side.

W14 multi-agent (benchmarks/WORKLOADS.md; ours: benchmarks/multi_agent.py): every agent is a
``create_react_agent`` whose scripted model asks for ``echo`` once, then answers. ``W14_single``
is one of them (2 model calls per invoke); ``W14_sequential`` a ``StateGraph(MessagesState)``
with three of them as nodes, START -> a -> b -> c -> END (6 model calls); ``W14_supervisor``
langgraph-supervisor's ``create_supervisor`` over three of them (defaults: handoff tools,
``output_mode="last_message"``, handoff-back messages), its model handing off to a, b, c one
per answer, then answering (10 model calls). One ``InMemorySaver``, a new thread per invoke,
600 model calls per shape and trial, the shapes' trials alternated; one op is a model call.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import resource
import subprocess
import sys
import time
import warnings
from typing import Annotated, Any, TypedDict

os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
warnings.filterwarnings("ignore")

TRIALS = 3  # --trials
W7_NODES, W7_SUB_AT, W7_SUB_NODES, W7_INVOKES = 20, 9, 3, 200  # node n9 (the 10th) is the child
W8_WIDTH, W8_INVOKES = 256, 50
W6_WIDTHS = ((64, 100), (256, 25))  # (width, invokes)
W11_TURNS = 1000
REDIS_MODULES = ""  # --redis-modules: a server with RediSearch + RedisJSON ('' = none)


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def emit(workload: str, n: int, seconds: float, **extra: Any) -> None:
    rec = {
        "workload": workload,
        "n": n,
        "seconds": round(seconds, 6),
        "per_op_us": round(seconds / n * 1e6, 3) if n else None,
        "peak_rss_mb": peak_rss_mb(),
    }
    rec.update(extra)
    print(json.dumps(rec), flush=True)


def median_trial(results: list[tuple[float, dict[str, Any]]]) -> tuple[float, dict[str, Any]]:
    srt = sorted(results, key=lambda r: r[0])
    sec, ex = srt[len(srt) // 2]
    ex = dict(ex)
    ex["trials"] = len(results)
    ex["trial_seconds"] = [round(r[0], 4) for r in results]
    return sec, ex


def cfg(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": 10_000}


# ----------------------------------------------------------------------------------------------


class W6State(TypedDict):
    x: int
    items: Annotated[list, operator.add]


def _w6(width: int, invokes: int) -> None:
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(W6State)
    g.add_node("fan", lambda s: {"x": s["x"] + 1})

    def mk(i: int) -> Any:
        return lambda s: {"items": [i]}

    for i in range(width):
        g.add_node(f"w{i}", mk(i))
        g.add_edge("fan", f"w{i}")
    g.add_node("join", lambda s: {"x": len(s["items"])})
    g.add_edge(START, "fan")
    g.add_edge([f"w{i}" for i in range(width)], "join")
    g.add_edge("join", END)
    app = g.compile()
    out = app.invoke({"x": 0, "items": []})
    assert out["x"] == width and sorted(out["items"]) == list(range(width)), out
    res = []
    for _trial in range(TRIALS):
        t0 = time.perf_counter()
        for _ in range(invokes):
            out = app.invoke({"x": 0, "items": []})
        dt = time.perf_counter() - t0
        assert out["x"] == width and len(out["items"]) == width
        res.append((dt, {}))
    dt, ex = median_trial(res)
    tasks = invokes * (width + 2)
    emit(f"W6_fanout_{width}", tasks, dt, unit=f"task (fan + {width} parallel + join per invoke)",
         invokes=invokes, width=width, per_task_us=round(dt / tasks * 1e6, 2),
         per_invoke_us=round(dt / invokes * 1e6, 1), **ex)  # fmt: skip


def w6_widths() -> None:
    for width, invokes in W6_WIDTHS:
        _w6(width, invokes)


class XState(TypedDict):
    x: int


def inc(s: XState) -> dict[str, int]:
    return {"x": s["x"] + 1}


def make_w7(checkpointer: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    child = StateGraph(XState)
    for j in range(W7_SUB_NODES):
        child.add_node(f"s{j}", inc)
    child.add_edge(START, "s0")
    for j in range(W7_SUB_NODES - 1):
        child.add_edge(f"s{j}", f"s{j + 1}")
    child.add_edge(f"s{W7_SUB_NODES - 1}", END)
    sub = child.compile()  # inherits the parent's checkpointer, if any

    g = StateGraph(XState)
    for i in range(W7_NODES):
        g.add_node(f"n{i}", sub if i == W7_SUB_AT else inc)
    g.add_edge(START, "n0")
    for i in range(W7_NODES - 1):
        g.add_edge(f"n{i}", f"n{i + 1}")
    g.add_edge(f"n{W7_NODES - 1}", END)
    return g.compile(checkpointer=checkpointer)


def _w7(name: str, checkpointer: Any) -> None:
    final = W7_NODES - 1 + W7_SUB_NODES
    steps = W7_NODES + W7_SUB_NODES  # 19 plain + the subgraph node + 3 inner = 23
    import langgraph.graph  # noqa: F401  (the import is not part of build_compile_ms)

    t0 = time.perf_counter()
    app = make_w7(checkpointer)
    compile_s = time.perf_counter() - t0

    def config(tid: str) -> dict[str, Any] | None:
        return cfg(tid) if checkpointer is not None else None

    assert app.invoke({"x": 0}, config(f"{name}-warm"))["x"] == final
    res = []
    for trial in range(TRIALS):
        t0 = time.perf_counter()
        for i in range(W7_INVOKES):
            out = app.invoke({"x": 0}, config(f"{name}-{trial}-{i}"))
        dt = time.perf_counter() - t0
        assert out["x"] == final, out
        res.append((dt, {}))
    dt, ex = median_trial(res)
    emit(name, W7_INVOKES * steps, dt,
         unit=f"node step ({W7_NODES - 1} plain + 1 subgraph node + {W7_SUB_NODES} inner = {steps} per invoke)",
         invokes=W7_INVOKES, steps_per_invoke=steps, checkpointer=type(checkpointer).__name__ if checkpointer else None,
         per_invoke_us=round(dt / W7_INVOKES * 1e6, 1), build_compile_ms=round(compile_s * 1e3, 2), **ex)  # fmt: skip


def w7_subgraph() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    _w7("W7_subgraph", None)
    _w7("W7_subgraph_mem", InMemorySaver())


class W8State(TypedDict):
    items: Annotated[list, operator.add]
    results: Annotated[list, operator.add]
    total: int


def w8_send() -> None:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    def plan(s: W8State) -> dict[str, Any]:
        return {"items": list(range(W8_WIDTH))}

    def fan(s: W8State):  # no return hint: LangGraph reads it to infer the targets
        return [Send("work", {"item": i}) for i in s["items"]]

    def work(s: dict[str, Any]) -> dict[str, Any]:
        return {"results": [s["item"] * 2]}

    def reduce(s: W8State) -> dict[str, Any]:
        return {"total": sum(s["results"])}

    g = StateGraph(W8State)
    g.add_node("plan", plan)
    g.add_node("work", work)
    g.add_node("reduce", reduce)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan)
    g.add_edge("work", "reduce")
    g.add_edge("reduce", END)
    app = g.compile()
    total = sum(2 * i for i in range(W8_WIDTH))

    def check(out: dict[str, Any]) -> None:
        assert len(out["results"]) == W8_WIDTH, len(out["results"])
        assert out["total"] == total and sorted(out["results"]) == [2 * i for i in range(W8_WIDTH)]

    check(app.invoke({"items": [], "results": [], "total": 0}))
    res = []
    for _trial in range(TRIALS):
        t0 = time.perf_counter()
        for _ in range(W8_INVOKES):
            out = app.invoke({"items": [], "results": [], "total": 0})
        dt = time.perf_counter() - t0
        check(out)
        res.append((dt, {}))
    dt, ex = median_trial(res)
    emit("W8_send", W8_INVOKES * W8_WIDTH, dt, unit="Send task (plan + 256 Sends + reduce per invoke)",
         invokes=W8_INVOKES, sends_per_invoke=W8_WIDTH,
         per_invoke_us=round(dt / W8_INVOKES * 1e6, 1), **ex)  # fmt: skip


def w11_history() -> None:
    import statistics

    if not REDIS_MODULES:
        print(json.dumps({"workload": "W11_history_redis", "skipped": "no --redis-modules server"}))
        return
    import redis
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.redis import RedisSaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    redis.Redis.from_url(REDIS_MODULES).flushdb()  # our own throw-away loopback server
    saver = RedisSaver(redis_url=REDIS_MODULES)
    saver.setup()
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [AIMessage(f"answer {len(s['messages'])}")]})
    g.add_edge(START, "agent")
    g.add_edge("agent", END)
    app = g.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "long"}, "recursion_limit": 10_000}
    t0 = time.perf_counter()
    for _ in range(W11_TURNS):
        app.invoke({"messages": [HumanMessage("next")]}, config)
    built = time.perf_counter() - t0
    whole: list[float] = []
    limited: list[float] = []
    for _trial in range(TRIALS):
        t0 = time.perf_counter()
        history = list(app.get_state_history(config))
        whole.append(time.perf_counter() - t0)
        assert len(history[0].values["messages"]) == 2 * W11_TURNS
        t0 = time.perf_counter()
        assert len(list(app.get_state_history(config, limit=10))) == 10
        limited.append(time.perf_counter() - t0)
    median = statistics.median(whole)
    emit("W11_history_redis", len(history), median, unit="checkpoint listed (whole history)",
         turns=W11_TURNS, history_s=round(median, 4),
         limit10_ms=round(statistics.median(limited) * 1e3, 3),
         trial_seconds=[round(t, 4) for t in whole],
         trial_limit10_ms=[round(t * 1e3, 3) for t in limited], build_s=round(built, 2),
         server="Valkey + RediSearch + RedisJSON")  # fmt: skip


# ---- W14: multi-agent flows ------------------------------------------------------------------

W14_MODEL_CALLS = 600  # per trial and shape (ours: SIZES["w14_model_calls"], 1200: ours is faster)
W14_AGENTS = ("a", "b", "c")
W14_PER_INVOKE = {"W14_single": 2, "W14_sequential": 6, "W14_supervisor": 10}
W14_CALLS = {"n": 0}  # model calls made (checked after the timed loop)


def w14_models() -> tuple[Any, Any]:
    """(worker, supervisor) scripted chat models. A worker asks for ``echo`` once, then
    answers: it counts the echo rounds at the end of the conversation, so it works wherever
    the agent starts (after the user, after another agent's messages, after a handoff). The
    supervisor hands off to a, b, c, one per answer (it counts the handoffs back since the
    user's message), then answers."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Scripted(BaseChatModel):
        role: str = "worker"

        @property
        def _llm_type(self) -> str:
            return "scripted-fake"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # create_react_agent needs it
            return self

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> Any:
            W14_CALLS["n"] += 1
            n = 0
            if self.role == "worker":
                for m in reversed(messages):
                    if m.type == "tool" and m.name == "echo":
                        n += 1
                    elif not (
                        m.type == "ai" and m.tool_calls and m.tool_calls[0]["name"] == "echo"
                    ):
                        break
                if n < 1:
                    call = {
                        "name": "echo",
                        "args": {"x": n},
                        "id": f"call_{n}",
                        "type": "tool_call",
                    }
                    msg = AIMessage(content="", tool_calls=[call])
                else:
                    msg = AIMessage(content=f"final answer after {n} tool calls")
            else:
                for m in reversed(messages):
                    if m.type == "human":
                        break
                    if m.type == "tool" and m.name.startswith("transfer_back_to_"):
                        n += 1
                if n < len(W14_AGENTS):
                    call = {"name": f"transfer_to_{W14_AGENTS[n]}", "args": {}, "id": f"delegate_{n}",
                            "type": "tool_call"}  # fmt: skip
                    msg = AIMessage(content="", tool_calls=[call])
                else:
                    msg = AIMessage(content=f"supervisor answer after {n} agents")
            return ChatResult(generations=[ChatGeneration(message=msg)])

    return Scripted(role="worker"), Scripted(role="supervisor")


def w14_apps(saver: Any) -> dict[str, Any]:
    """The three shapes, on one ``InMemorySaver``: one ``create_react_agent``; a
    ``StateGraph(MessagesState)`` with three of them as nodes in sequence; and
    langgraph-supervisor's ``create_supervisor`` over three of them."""
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    @tool
    def echo(x: int) -> str:
        """Echo the integer back."""
        return f"ok {x}"

    worker, boss = w14_models()

    def agents() -> list[Any]:
        return [create_react_agent(worker, [echo], name=n) for n in W14_AGENTS]

    single = create_react_agent(worker, [echo], checkpointer=saver)
    seq = StateGraph(MessagesState)
    previous = START
    for agent in agents():
        seq.add_node(agent.name, agent)
        seq.add_edge(previous, agent.name)
        previous = agent.name
    seq.add_edge(previous, END)
    supervisor = create_supervisor(agents(), model=boss)
    return {"W14_single": single, "W14_sequential": seq.compile(checkpointer=saver),
            "W14_supervisor": supervisor.compile(checkpointer=saver)}  # fmt: skip


def w14_check(name: str, out: dict[str, Any]) -> None:
    messages = out["messages"]
    answers = [
        m for m in messages if m.type == "ai" and m.content == "final answer after 1 tool calls"
    ]
    assert len(answers) == (1 if name == "W14_single" else len(W14_AGENTS)), messages
    if name == "W14_supervisor":
        assert messages[-1].content == f"supervisor answer after {len(W14_AGENTS)} agents", messages
    else:
        assert messages[-1] is answers[-1], messages


def w14_multi_agent() -> None:
    from importlib.metadata import version

    from langgraph.checkpoint.memory import InMemorySaver

    apps = w14_apps(InMemorySaver())
    invokes = {name: max(1, W14_MODEL_CALLS // per) for name, per in W14_PER_INVOKE.items()}
    for name, app in apps.items():  # warm-up, and the model calls per invoke
        before = W14_CALLS["n"]
        w14_check(name, app.invoke({"messages": [("user", "go")]}, cfg(f"{name}-warm")))
        assert W14_CALLS["n"] - before == W14_PER_INVOKE[name], (name, W14_CALLS["n"] - before)
    times: dict[str, list[tuple[float, dict[str, Any]]]] = {name: [] for name in apps}
    order = list(apps)
    for trial in range(TRIALS):  # the shapes alternate, as ours do, each starting a trial in turn
        for name in order[trial % 3 :] + order[: trial % 3]:
            app = apps[name]
            before = W14_CALLS["n"]
            t0 = time.perf_counter()
            for i in range(invokes[name]):
                out = app.invoke({"messages": [("user", "go")]}, cfg(f"{name}-{trial}-{i}"))
            dt = time.perf_counter() - t0
            w14_check(name, out)
            assert W14_CALLS["n"] - before == invokes[name] * W14_PER_INVOKE[name]
            times[name].append((dt / (invokes[name] * W14_PER_INVOKE[name]), {}))
    single = [t for t, _ in times["W14_single"]]
    for name in apps:
        per_call, extra = median_trial(times[name])
        n = invokes[name] * W14_PER_INVOKE[name]
        ratios = sorted(t / s for (t, _), s in zip(times[name], single))
        best = min(t for t, _ in times[name]) / min(single)  # noise only adds: best against best
        extra["trial_per_call_us"] = [round(t * 1e6, 2) for t, _ in times[name]]
        del extra["trial_seconds"]
        if name == "W14_supervisor":
            extra["delegation"] = "one agent per supervisor answer"
            extra["langgraph_supervisor"] = version("langgraph-supervisor")
        emit(name, n, per_call * n, unit="model call", invokes=invokes[name],
             model_calls_per_invoke=W14_PER_INVOKE[name], tool_calls_per_invoke=1 if name == "W14_single" else 3,
             per_invoke_us=round(per_call * W14_PER_INVOKE[name] * 1e6, 1),
             vs_single=round(ratios[len(ratios) // 2], 3), vs_single_trials=[round(r, 3) for r in ratios],
             vs_single_best=round(best, 3),
             saver="InMemorySaver", **extra)  # fmt: skip


CHILDREN = {"W6W": w6_widths, "W7": w7_subgraph, "W8": w8_send, "W11": w11_history,
            "W14": w14_multi_agent}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description="LangGraph's W6 widths, W7, W8, W11 and W14")
    ap.add_argument("--child")
    ap.add_argument("--only", default=",".join(CHILDREN))
    ap.add_argument("--out")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--redis-modules", default="", help="a server with RediSearch + RedisJSON")
    args = ap.parse_args()
    global TRIALS, REDIS_MODULES
    TRIALS, REDIS_MODULES = args.trials, args.redis_modules
    if args.child:
        if args.child not in CHILDREN:
            raise SystemExit(f"unknown workload {args.child}")
        CHILDREN[args.child]()
        return
    lines = []
    t_all = time.perf_counter()
    for name in [n for n in args.only.split(",") if n]:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--trials", str(args.trials),
               "--redis-modules", args.redis_modules]  # fmt: skip
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        got = [line for line in p.stdout.splitlines() if line.startswith("{")]
        if p.returncode != 0:
            err = (p.stderr.strip().splitlines() or ["?"])[-1]
            got.append(json.dumps({"workload": name, "error": err[:400], "rc": p.returncode}))
        for line in got:
            print(line, flush=True)
        lines.extend(got)
        print(f"# {name}: subprocess wall {wall:.1f}s", file=sys.stderr, flush=True)
    print(f"# total wall {time.perf_counter() - t_all:.1f}s", file=sys.stderr)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
