"""Running graphs: updates, key strategies, routing, fan-out and join, sync and async."""

from __future__ import annotations

import asyncio
import re
import sys
import threading
from typing import Any

import pytest

from graph_agent import (
    END,
    START,
    GraphRecursionError,
    GraphUsageError,
    InvalidRouteError,
    InvalidUpdateError,
    KeyStrategy,
    NodeOutput,
    OverAllState,
    Overwrite,
    RunnableConfig,
    StateGraph,
)

from ..agent.flow_kit import Meeting
from .conftest import chain


def test_linear_chain_returns_final_state():
    result = chain(10).invoke({"x": 0})
    assert isinstance(result, OverAllState)
    assert result["x"] == 10


def test_overallstate_is_a_read_only_mapping():
    state = OverAllState({"a": 1})
    assert state["a"] == 1 and state.get("b", 2) == 2 and state.value("b") is None
    assert dict(state) == {"a": 1} and "a" in state and len(state) == 1
    with pytest.raises(TypeError):
        state["a"] = 2  # type: ignore[index]
    with pytest.raises(KeyError):
        state["b"]


def test_key_strategies_replace_append_merge_and_callable():
    graph = StateGraph(
        key_strategies={
            "log": KeyStrategy.APPEND,
            "meta": KeyStrategy.MERGE,
            "total": lambda old, new: (old or 0) + new,
        }
    )
    graph.add_node("a", lambda s: {"log": "a", "meta": {"a": 1}, "total": 5, "last": "a"})
    graph.add_node("b", lambda s: {"log": ["b1", "b2"], "meta": {"b": 2}, "total": 2, "last": "b"})
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    out = graph.compile().invoke({"log": ["start"], "meta": {"x": 0}})
    assert out["log"] == ["start", "a", "b1", "b2"]
    assert out["meta"] == {"x": 0, "a": 1, "b": 2}
    assert out["total"] == 7
    assert out["last"] == "b"


def test_overwrite_bypasses_the_strategy():
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("trim", lambda s: {"log": Overwrite(s["log"][-1:])})
    graph.add_edge(START, "trim").add_edge("trim", END)
    assert graph.compile().invoke({"log": [1, 2, 3]})["log"] == [3]


def test_node_may_take_config_and_sees_metadata():
    seen: dict[str, Any] = {}

    def node(state, config: RunnableConfig):
        seen["user"] = config.metadata["user_id"]
        seen["thread"] = config.thread_id
        return {"ok": True}

    graph = StateGraph().add_node("n", node).add_edge(START, "n").add_edge("n", END)
    graph.compile().invoke({}, {"thread_id": "t9", "metadata": {"user_id": "u1"}})
    assert seen == {"user": "u1", "thread": "t9"}


def test_runnable_config_metadata_is_immutable_and_validated():
    config = RunnableConfig(metadata={"user_id": "u1"})
    with pytest.raises(TypeError):
        config.metadata["user_id"] = "u2"  # type: ignore[index]
    with pytest.raises(GraphUsageError, match="thread_id"):
        RunnableConfig(thread_id="")
    with pytest.raises(GraphUsageError, match="recursion_limit"):
        RunnableConfig(recursion_limit=0)
    with pytest.raises(GraphUsageError, match="unknown RunnableConfig field"):
        chain(1).invoke({"x": 0}, {"thread": "t"})


def test_fan_out_runs_branches_in_one_step_and_joins_once():
    calls: list[str] = []
    barrier = threading.Barrier(3, timeout=5)

    def branch(name):
        def run(state):
            barrier.wait()  # all three must run at the same time, or this times out
            calls.append(name)
            return {"items": [name]}

        return run

    graph = StateGraph(key_strategies={"items": KeyStrategy.APPEND})
    graph.add_node("fan", lambda s: {"x": 1})
    for name in ("c", "a", "b"):
        graph.add_node(name, branch(name)).add_edge("fan", name).add_edge(name, "join")

    def join(state):
        calls.append("join")
        return {"x": len(state["items"])}

    graph.add_node("join", join).add_edge(START, "fan").add_edge("join", END)
    outputs = list(graph.compile().stream({"items": []}))
    assert calls.count("join") == 1 and calls[-1] == "join"
    # merge order is the order the nodes were added, whatever order they finished in
    assert outputs[-1].state["items"] == ["c", "a", "b"]
    assert outputs[-1].state["x"] == 3
    assert [o.node for o in outputs] == ["fan", "c", "a", "b", "join"]


def test_join_waits_for_a_longer_branch():
    ran: list[str] = []

    def node(name):
        def run(state):
            ran.append(name)
            return {"path": [name]}

        return run

    graph = StateGraph(key_strategies={"path": KeyStrategy.APPEND})
    for name in ("fan", "short", "long1", "long2", "join"):
        graph.add_node(name, node(name))
    graph.add_edge(START, "fan").add_edge("fan", "short").add_edge("fan", "long1")
    graph.add_edge("long1", "long2").add_edge("long2", "join").add_edge("short", "join")
    graph.add_edge("join", END)
    result = graph.compile().invoke({})
    assert ran.count("join") == 1
    assert result["path"][-1] == "join"
    assert set(result["path"][:-1]) == {"fan", "short", "long1", "long2"}


def test_two_writes_to_a_replace_key_in_one_step_raise():
    graph = StateGraph()
    graph.add_node("fan", lambda s: None)
    graph.add_node("left", lambda s: {"answer": 1}).add_node("right", lambda s: {"answer": 2})
    graph.add_edge(START, "fan").add_edge("fan", "left").add_edge("fan", "right")
    graph.add_edge("left", END).add_edge("right", END)
    with pytest.raises(InvalidUpdateError) as info:
        graph.compile().invoke({})
    assert info.value.key == "answer"
    assert (
        "node 'left' and node 'right' both wrote key 'answer' in the same super-step, and the key is REPLACE"
        in str(info.value)
    )


@pytest.mark.parametrize(
    ("left", "right"),
    [(Overwrite([1]), [2]), ([1], Overwrite([2])), (Overwrite([1]), Overwrite([2]))],
)
def test_overwrite_cannot_share_a_step_with_another_write(left, right):
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND}).add_node("fan", lambda s: None)
    graph.add_node("left", lambda s: {"log": left}).add_node("right", lambda s: {"log": right})
    graph.add_edge(START, "fan").add_edge("fan", "left").add_edge("fan", "right")
    graph.add_edge("left", END).add_edge("right", END)
    with pytest.raises(InvalidUpdateError, match="one of them with Overwrite") as info:
        graph.compile().invoke({})
    assert info.value.key == "log" and info.value.node == "right"


def test_parallel_appends_to_one_key_merge_in_node_order():
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND}).add_node("fan", lambda s: None)
    graph.add_node("left", lambda s: {"log": ["l"]}).add_node("right", lambda s: {"log": ["r"]})
    graph.add_edge(START, "fan").add_edge("fan", "left").add_edge("fan", "right")
    graph.add_edge("left", END).add_edge("right", END)
    assert graph.compile().invoke({"log": []})["log"] == ["l", "r"]


def test_conditional_edges_route_by_label_and_in_parallel():
    graph = StateGraph(key_strategies={"seen": KeyStrategy.APPEND})
    graph.add_node("start", lambda s: None)
    for name in ("a", "b", "c"):
        graph.add_node(name, lambda s, name=name: {"seen": name}).add_edge(name, END)
    graph.add_edge(START, "start")
    graph.add_conditional_edges("start", lambda s: s["pick"], {"A": "a", "B": "b", "C": "c"})
    app = graph.compile()
    assert app.invoke({"pick": "B"})["seen"] == ["b"]
    assert app.invoke({"pick": ["A", "C"]})["seen"] == ["a", "c"]


def test_router_without_map_returns_node_names_and_can_take_config():
    graph = StateGraph().add_node("a", lambda s: {"v": 1}).add_node("b", lambda s: {"v": 2})
    graph.add_edge(START, "a").add_edge("b", END)
    graph.add_conditional_edges("a", lambda s, config: config.metadata["next"])
    assert graph.compile().invoke({}, {"metadata": {"next": "b"}})["v"] == 2
    assert graph.compile().invoke({}, {"metadata": {"next": END}})["v"] == 1


def test_conditional_entry_from_start():
    graph = StateGraph().add_node("a", lambda s: {"v": "a"}).add_node("b", lambda s: {"v": "b"})
    graph.add_conditional_edges(START, lambda s: s["go"], ["a", "b"])
    graph.add_edge("a", END).add_edge("b", END)
    assert graph.compile().invoke({"go": "b"})["v"] == "b"


def test_unknown_router_label_names_router_label_and_known_labels():
    graph = StateGraph().add_node("a", lambda s: None).add_node("b", lambda s: None)
    graph.add_edge(START, "a").add_edge("b", END)
    graph.add_conditional_edges("a", lambda s: "c", {"to_b": "b", "done": END})
    with pytest.raises(InvalidRouteError) as info:
        graph.compile().invoke({})
    message = str(info.value)
    assert "from 'a'" in message and "'c'" in message and "['to_b', 'done']" in message
    assert info.value.node == "a" and info.value.label == "c"


def test_unknown_router_target_without_map_lists_nodes():
    graph = StateGraph().add_node("a", lambda s: None).add_edge(START, "a")
    graph.add_conditional_edges("a", lambda s: None)
    with pytest.raises(InvalidRouteError, match=r"neither a node nor END.*\['a', '__end__'\]"):
        graph.compile().invoke({})


@pytest.mark.parametrize(
    ("update", "strategies", "message"),
    [
        (["not", "a", "dict"], {}, "node 'bad' returned list; state updates must be a dict"),
        ({1: "x"}, {}, "key 1 (int); state keys must be str"),
        ({"m": [1]}, {"m": KeyStrategy.MERGE}, "wrote a list to MERGE key 'm'"),
    ],
)
def test_bad_updates_name_the_node_and_key(update, strategies, message):
    graph = StateGraph(key_strategies=strategies)
    graph.add_node("bad", lambda s: update).add_edge(START, "bad").add_edge("bad", END)
    with pytest.raises(InvalidUpdateError, match=re.escape(message)) as info:
        graph.compile().invoke({})
    assert info.value.node == "bad"


def test_append_onto_a_non_list_is_refused():
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("n", lambda s: {"log": 1}).add_edge(START, "n").add_edge("n", END)
    with pytest.raises(InvalidUpdateError, match="whose current value is a str, not a list"):
        graph.compile().invoke({"log": Overwrite("oops")})


def test_failing_custom_strategy_names_key_and_node():
    graph = StateGraph(key_strategies={"n": lambda old, new: old + new})
    graph.add_node("n1", lambda s: {"n": 1}).add_edge(START, "n1").add_edge("n1", END)
    with pytest.raises(
        InvalidUpdateError, match="key strategy of 'n' failed on the update from the input"
    ):
        graph.compile().invoke({"n": 1})


def test_bad_input_type_is_refused():
    with pytest.raises(GraphUsageError, match="input must be a dict"):
        chain(1).invoke([1, 2])  # type: ignore[arg-type]


def test_recursion_limit_raises_instead_of_stopping_silently():
    graph = StateGraph().add_node("loop", lambda s: {"n": s.get("n", 0) + 1})
    graph.add_edge(START, "loop")
    graph.add_conditional_edges("loop", lambda s: "loop" if s["n"] < 100 else END)
    with pytest.raises(GraphRecursionError, match="recursion_limit=5"):
        graph.compile(recursion_limit=5).invoke({})
    with pytest.raises(GraphRecursionError, match="recursion_limit=7"):
        graph.compile().invoke({}, RunnableConfig(recursion_limit=7))
    assert graph.compile(recursion_limit=100).invoke({})["n"] == 100


def assert_notes(error: BaseException, expected: list[str]) -> None:
    """``error`` carries exactly the ``expected`` notes where exceptions have notes (3.11+);
    on 3.10, which has none, it carries no ``__notes__`` at all (nothing is made up)."""
    if sys.version_info >= (3, 11):
        assert error.__notes__ == expected
    else:
        assert not hasattr(error, "__notes__")


def test_node_exception_propagates_unchanged():
    class Boom(Exception):
        pass

    def explode(state):
        raise Boom("kaput")

    graph = StateGraph().add_node("x", explode).add_edge(START, "x").add_edge("x", END)
    with pytest.raises(Boom, match="kaput") as info:
        graph.compile().invoke({}, {"thread_id": "t-boom"})
    assert type(info.value) is Boom and info.value.args == ("kaput",)
    assert_notes(info.value, ["raised by node 'x' (thread 't-boom')"])


def test_parallel_failure_waits_for_siblings_and_raises_first_in_node_order():
    finished: list[str] = []
    failed = threading.Event()

    def slow(state):
        assert failed.wait(10)  # still running when its sibling fails
        finished.append("slow")
        return None

    def fail(state):
        failed.set()
        raise ValueError("branch failed")

    graph = StateGraph().add_node("fan", lambda s: None)
    graph.add_node("fail", fail).add_node("slow", slow)
    graph.add_edge(START, "fan").add_edge("fan", "fail").add_edge("fan", "slow")
    graph.add_edge("fail", END).add_edge("slow", END)
    with pytest.raises(ValueError, match="branch failed"):
        graph.compile().invoke({})
    assert finished == ["slow"]


def test_stream_yields_node_outputs_with_update_and_state():
    outputs = list(chain(3).stream({"x": 0}))
    assert [o.node for o in outputs] == ["n0", "n1", "n2"]
    assert all(isinstance(o, NodeOutput) for o in outputs)
    assert [o.update for o in outputs] == [{"x": 1}, {"x": 2}, {"x": 3}]
    assert outputs[-1].state["x"] == 3


def test_sync_api_refuses_async_nodes_and_routers_before_running():
    ran: list[str] = []

    async def anode(state):
        return {"v": 1}

    graph = StateGraph().add_node("first", lambda s: ran.append("first"))
    graph.add_node("anode", anode).add_edge(START, "first").add_edge("first", "anode")
    graph.add_edge("anode", END)
    with pytest.raises(GraphUsageError, match=r"\['anode'\] are async; use ainvoke"):
        graph.compile().invoke({})
    assert ran == []


def test_a_sync_callable_returning_a_coroutine_is_reported():
    async def work(state):
        return {"v": 1}

    graph = StateGraph().add_node("sneaky", lambda s: work(s))
    graph.add_edge(START, "sneaky").add_edge("sneaky", END)
    with pytest.raises(GraphUsageError, match="node 'sneaky' returned an awaitable"):
        graph.compile().invoke({})
    assert asyncio.run(graph.compile().ainvoke({}))["v"] == 1


def test_ainvoke_runs_async_and_sync_nodes_and_routers():
    loop_threads: set[int] = set()
    sync_threads: set[int] = set()

    async def fetch(state, config):
        loop_threads.add(threading.get_ident())
        await asyncio.sleep(0)
        return {"items": [config.metadata["tag"]]}

    def compute(state):
        sync_threads.add(threading.get_ident())
        return {"items": ["sync"]}

    async def route(state):
        return "done" if len(state["items"]) >= 2 else "again"

    graph = StateGraph(key_strategies={"items": KeyStrategy.APPEND})
    graph.add_node("fetch", fetch).add_node("compute", compute)
    graph.add_edge(START, "fetch").add_edge("fetch", "compute")
    graph.add_conditional_edges("compute", route, {"done": END, "again": "fetch"})

    async def main():
        loop_threads.add(threading.get_ident())
        result = await graph.compile().ainvoke({}, {"metadata": {"tag": "t"}})
        streamed = [o.node async for o in graph.compile().astream({}, {"metadata": {"tag": "t"}})]
        return result, streamed

    result, streamed = asyncio.run(main())
    assert result["items"] == ["t", "sync"]
    assert streamed == ["fetch", "compute"]
    assert len(loop_threads) == 1
    assert not sync_threads & loop_threads  # sync nodes never ran on the loop's thread


def test_async_parallel_branches_run_concurrently():
    active = 0
    peak = 0

    all_in = Meeting(4)

    async def branch(state):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await all_in.await_("branch")  # run one after another, the first waits alone and fails
        active -= 1
        return {"n": [1]}

    graph = StateGraph(key_strategies={"n": KeyStrategy.APPEND}).add_node("fan", lambda s: None)
    for i in range(4):
        graph.add_node(f"b{i}", branch).add_edge("fan", f"b{i}").add_edge(f"b{i}", END)
    graph.add_edge(START, "fan")
    assert asyncio.run(graph.compile().ainvoke({}))["n"] == [1, 1, 1, 1]
    assert peak == 4


def test_async_failure_cancels_siblings():
    cancelled = asyncio.Event

    async def main():
        got_cancelled = cancelled()

        async def slow(state):
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                got_cancelled.set()
                raise

        async def fail(state):
            raise RuntimeError("nope")

        graph = StateGraph().add_node("fan", lambda s: None)
        graph.add_node("slow", slow).add_node("fail", fail)
        graph.add_edge(START, "fan").add_edge("fan", "slow").add_edge("fan", "fail")
        graph.add_edge("slow", END).add_edge("fail", END)
        with pytest.raises(RuntimeError, match="nope"):
            await asyncio.wait_for(graph.compile().ainvoke({}), 2)
        return got_cancelled.is_set()

    assert asyncio.run(main()) is True


def test_sync_invoke_starts_no_event_loop():
    def node(state):
        with pytest.raises(RuntimeError):
            asyncio.get_running_loop()
        return {"ok": True}

    graph = StateGraph().add_node("n", node).add_edge(START, "n").add_edge("n", END)
    assert graph.compile().invoke({})["ok"] is True


def test_default_recursion_limit_only_guards_against_loops():
    assert chain(3).recursion_limit == 25
    assert chain(60).recursion_limit == 60  # a long pipeline has no loop to guard against
    assert chain(60).invoke({"x": 0})["x"] == 60
    looping = StateGraph().add_node("a", lambda s: None).add_edge(START, "a")
    looping.add_conditional_edges("a", lambda s: "a", ["a", END])
    assert looping.compile().recursion_limit == 25
    assert chain(60, recursion_limit=3).recursion_limit == 3


def test_second_parameter_with_a_default_is_not_config():
    graph = StateGraph()
    graph.add_node("bound", lambda s, name="bound": {"who": name})
    graph.add_node("wants", lambda s, config=None: {"thread": config.thread_id})
    graph.add_edge(START, "bound").add_edge("bound", "wants").add_edge("wants", END)
    result = graph.compile().invoke({}, {"thread_id": "sig"})
    assert result["who"] == "bound" and result["thread"] == "sig"


def test_router_without_path_map_does_not_hold_back_parallel_nodes(saver):
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("a", lambda s: {"log": ["a"]}).add_node("b", lambda s: {"log": ["b"]})
    graph.add_edge(START, "a").add_edge(START, "b").add_edge("b", END)
    graph.add_conditional_edges("a", lambda s: END)
    app = graph.compile(saver=saver)
    app.invoke({}, {"thread_id": "p"})
    steps = [s.metadata["nodes"] for s in app.get_state_history({"thread_id": "p"})]
    assert steps == [["a", "b"], []]  # the step, then the input (checkpointed first)


def test_draw_mermaid_rejects_an_unknown_direction():
    assert chain(1).draw_mermaid("LR").startswith("flowchart LR\n")
    with pytest.raises(ValueError, match="direction must be one of"):
        chain(1).draw_mermaid("sideways")


def test_join_inside_a_loop_runs_once_per_round(saver):
    graph = StateGraph(key_strategies={"path": KeyStrategy.APPEND})
    for name in ("a", "b", "j"):
        graph.add_node(name, lambda s, name=name: {"path": [name]})
    graph.add_edge(START, "a").add_edge("a", "b").add_edge("a", "j").add_edge("b", "j")
    graph.add_conditional_edges("j", lambda s: "a" if s["path"].count("j") < 2 else END, ["a", END])
    assert graph.compile().invoke({})["path"] == ["a", "b", "j", "a", "b", "j"]


def test_router_exception_propagates_with_a_note_naming_the_router():
    def broken(state):
        raise KeyError("missing")

    graph = StateGraph().add_node("a", lambda s: None).add_edge(START, "a")
    graph.add_conditional_edges("a", broken, [END])
    with pytest.raises(KeyError) as info:
        graph.compile().invoke({})
    assert type(info.value) is KeyError and info.value.args == ("missing",)
    assert_notes(info.value, ["raised by the router of the conditional edge from 'a'"])


def test_parallel_sync_nodes_see_the_callers_context_variables():
    import contextvars

    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id")
    graph = StateGraph(key_strategies={"seen": KeyStrategy.APPEND}).add_node("fan", lambda s: None)
    for i in range(3):
        graph.add_node(f"b{i}", lambda s: {"seen": [request_id.get("missing")]})
        graph.add_edge("fan", f"b{i}").add_edge(f"b{i}", END)
    graph.add_edge(START, "fan")
    token = request_id.set("req-7")
    try:
        assert graph.compile().invoke({})["seen"] == ["req-7"] * 3
    finally:
        request_id.reset(token)
