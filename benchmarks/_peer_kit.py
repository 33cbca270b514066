"""What LangGraph's side of the benchmarks shares (benchmarks/peer_langgraph.py, its W5 on
Redis, benchmarks/peer_serving_graphs.py): the JSON line each workload prints, the median of
its trials, the scripted chat model and tool, the ReAct agent in its variants, and the two
timed shapes W2/W5 (ReAct rounds) and W3/W5 (create and resume many threads) share. It runs
in the peer venv (``.venv-peer``), never in ours.
"""

import json
import os
import resource
import time
import warnings
from typing import Annotated, TypedDict

os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
warnings.filterwarnings("ignore")


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def emit(workload: str, n: int, seconds: float, **extra) -> None:
    rec = {
        "workload": workload,
        "n": n,
        "seconds": round(seconds, 6),
        "per_op_us": round(seconds / n * 1e6, 3) if n else None,
        "peak_rss_mb": peak_rss_mb(),
    }
    rec.update(extra)
    print(json.dumps(rec), flush=True)


TRIALS = 3  # set by peer_langgraph.py --trials; each timed section is repeated, median reported


def median_trial(results):
    """results: list of (seconds, extra_dict). Returns the median-by-seconds
    trial plus spread fields."""
    srt = sorted(results, key=lambda r: r[0])
    sec, ex = srt[len(srt) // 2]
    ex = dict(ex)
    ex["trials"] = len(results)
    ex["trial_seconds"] = [round(r[0], 4) for r in results]
    return sec, ex


# ----------------------------------------------------------------------------
# Scripted fake chat model + trivial tool
# ----------------------------------------------------------------------------


def make_model(k: int):
    """A BaseChatModel that, per human turn, emits k tool calls (one per model
    call) and then a final text answer. Stateless: it derives its position from
    the number of ToolMessages after the last HumanMessage."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class ScriptedChatModel(BaseChatModel):
        k: int = 0

        @property
        def _llm_type(self) -> str:
            return "scripted-fake"

        def bind_tools(self, tools, **kwargs):  # create_react_agent needs it
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            n = 0
            for m in reversed(messages):
                t = m.type
                if t == "human":
                    break
                if t == "tool":
                    n += 1
            if n < self.k:
                msg = AIMessage(
                    content="",
                    tool_calls=[
                        {"name": "echo", "args": {"x": n}, "id": f"call_{n}", "type": "tool_call"}
                    ],
                )
            else:
                msg = AIMessage(content=f"final answer after {n} tool calls")
            return ChatResult(generations=[ChatGeneration(message=msg)])

    return ScriptedChatModel(k=k)


def make_tool():
    from langchain_core.tools import tool

    @tool
    def echo(x: int) -> str:
        """Echo the integer back."""
        return f"ok {x}"

    return echo


def make_react(k: int, checkpointer, variant: str = "prebuilt"):
    """variant: 'prebuilt' = langgraph.prebuilt.create_react_agent;
    'handbuilt' = StateGraph(MessagesState) model node -> ToolNode loop;
    'delta' = same as handbuilt but the messages key is a DeltaChannel (beta
    in langgraph 1.2: checkpoints store write deltas + periodic snapshots
    instead of re-serializing the whole list)."""
    model = make_model(k)
    tool = make_tool()
    if variant == "prebuilt":
        from langgraph.prebuilt import create_react_agent

        return create_react_agent(model, [tool], checkpointer=checkpointer)
    # hand-built: model node -> (conditional) tool node -> model node
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    if variant == "delta":
        from langgraph.channels import DeltaChannel
        from langgraph.graph.message import add_messages

        def add_messages_batched(state, writes):
            for w in writes:
                state = add_messages(state, w)
            return state

        class MessagesState(TypedDict):
            messages: Annotated[list, DeltaChannel(add_messages_batched)]

    def agent(state):
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode([tool]))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer)


def cfg(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": 10_000}


# ----------------------------------------------------------------------------
# InMemorySaver size accounting
# ----------------------------------------------------------------------------


def mem_thread_bytes(saver, thread_id: str) -> dict:
    """Total serialized bytes InMemorySaver holds for one thread: checkpoint
    records + metadata + channel-value blobs + pending writes."""
    ck = meta = blobs = writes = 0
    count = 0
    for _ns, d in saver.storage.get(thread_id, {}).items():
        for _cid, (c, m, _parent) in d.items():
            ck += len(c[1])
            meta += len(m[1])
            count += 1
    for key, v in saver.blobs.items():
        if key[0] == thread_id:
            blobs += len(v[1])
    for key, d in saver.writes.items():
        if key[0] == thread_id:
            for _tid, _ch, val, _path in d.values():
                writes += len(val[1])
    return {
        "checkpoints": count,
        "ckpt_bytes": ck,
        "meta_bytes": meta,
        "blob_bytes": blobs,
        "write_bytes": writes,
        "total_bytes": ck + meta + blobs + writes,
    }


def latest_state_bytes(saver, thread_id: str) -> int:
    """Serialized size of the latest checkpoint incl. its channel values."""
    tup = saver.get_tuple(cfg(thread_id))
    if tup is None:
        return 0
    return len(saver.serde.dumps_typed(tup.checkpoint)[1])


def _react_rounds(
    name: str,
    saver,
    variant: str = "prebuilt",
    reps: int = 25,
    k: int = 20,
    size_fn=None,
    extra=None,
    trials: int | None = None,
):
    app = make_react(k, saver, variant)
    # warm-up conversation (not timed)
    out = app.invoke({"messages": [("user", "go")]}, cfg(f"{name}-warm"))
    assert sum(1 for m in out["messages"] if m.type == "tool") == k, out
    res = []
    for trial in range(trials or TRIALS):
        t0 = time.perf_counter()
        for r in range(reps):
            out = app.invoke({"messages": [("user", "go")]}, cfg(f"{name}-{trial}-{r}"))
        dt = time.perf_counter() - t0
        assert out["messages"][-1].content == f"final answer after {k} tool calls"
        res.append((dt, {}))
    dt, ex = median_trial(res)
    ex.update(
        {
            "unit": "model+tool round",
            "conversations": reps,
            "rounds_per_conversation": k,
            "variant": variant,
            "per_conversation_ms": round(dt / reps * 1e3, 3),
            "messages_per_thread": len(out["messages"]),
        }
    )
    if size_fn:
        ex.update(size_fn(f"{name}-0-{reps - 1}"))
    if extra:
        ex.update(extra)
    emit(name, reps * k, dt, **ex)


def _resume(name: str, make_saver, n_threads: int = 1000, extra=None, trials: int | None = None):
    res = []
    for trial in range(trials or TRIALS):
        saver = make_saver()  # fresh store per trial
        app = make_react(1, saver)
        app.invoke({"messages": [("user", "hi")]}, cfg(f"{name}-warm"))
        t0 = time.perf_counter()
        for i in range(n_threads):
            app.invoke({"messages": [("user", "hi")]}, cfg(f"tr{trial}-t{i}"))
        t1 = time.perf_counter()
        for i in range(n_threads):
            out = app.invoke({"messages": [("user", "again")]}, cfg(f"tr{trial}-t{i}"))
        t2 = time.perf_counter()
        # human, ai(tool call), tool, ai(final) x 2 turns
        assert len(out["messages"]) == 8, len(out["messages"])
        res.append(
            (
                t2 - t0,
                {
                    "create_threads_per_s": round(n_threads / (t1 - t0), 1),
                    "resume_threads_per_s": round(n_threads / (t2 - t1), 1),
                    "create_per_thread_us": round((t1 - t0) / n_threads * 1e6, 1),
                    "resume_per_thread_us": round((t2 - t1) / n_threads * 1e6, 1),
                },
            )
        )
    dt, ex = median_trial(res)
    ex.update(
        {
            "unit": "thread-invoke (create+resume)",
            "threads": n_threads,
            "threads_per_s_overall": round(n_threads / dt, 1),
        }
    )
    if extra:
        ex.update(extra)
    emit(name, 2 * n_threads, dt, **ex)
