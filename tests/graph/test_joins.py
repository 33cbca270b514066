"""Wide fan-outs and joins: a join runs once, after every branch, and the branches' writes
merge in node order, whatever the width; the bookkeeping grows with the width, not its square."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Callable
from typing import Any

import networkx as nx
import pytest

from checkpoint import MemorySaver
from graph_agent import (
    END,
    START,
    CompiledGraph,
    InvalidUpdateError,
    KeyStrategy,
    Overwrite,
    StateGraph,
    Updates,
)
from graph_agent._runtime.pool import thread_pool
from graph_agent.graph._spec import Reachability

WIDE = 256


def _wide(width: int, order: list[int] | None = None, **compile_kw: Any) -> CompiledGraph:
    """``fan`` -> ``w0..w{width-1}`` (added in ``order``; ``wi`` appends ``i``) -> ``join``,
    which records how many items it saw."""
    graph = StateGraph(key_strategies={"items": KeyStrategy.APPEND, "joins": KeyStrategy.APPEND})
    graph.add_node("fan", lambda s: None)
    for i in order if order is not None else range(width):
        graph.add_node(f"w{i}", lambda s, i=i: {"items": [i]})
        graph.add_edge("fan", f"w{i}").add_edge(f"w{i}", "join")
    graph.add_node("join", lambda s: {"joins": [len(s["items"])]})
    graph.add_edge(START, "fan").add_edge("join", END)
    return graph.compile(**compile_kw)


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
def test_a_wide_fan_out_runs_in_one_step_and_joins_once_with_every_item_in_node_order(
    run: str,
) -> None:
    saver = MemorySaver()
    order = list(range(WIDE))
    random.Random(7).shuffle(order)
    app = _wide(WIDE, order, saver=saver)
    if run == "invoke":
        out = app.invoke({}, {"thread_id": "wide"})
    else:
        out = asyncio.run(app.ainvoke({}, {"thread_id": "wide"}))
    assert out["joins"] == [WIDE]  # once, after all of them
    assert out["items"] == order  # the order the nodes were added, not the order they finished
    steps = [s.metadata["nodes"] for s in app.get_state_history({"thread_id": "wide"})][::-1]
    assert steps == [[], ["fan"], [f"w{i}" for i in order], ["join"]]


def test_a_wide_join_inside_a_loop_runs_once_per_round() -> None:
    width, rounds = 64, 3
    graph = StateGraph(key_strategies={"items": KeyStrategy.APPEND, "joins": KeyStrategy.APPEND})
    graph.add_node("fan", lambda s: None)
    for i in range(width):
        graph.add_node(f"w{i}", lambda s, i=i: {"items": [i]})
        graph.add_edge("fan", f"w{i}").add_edge(f"w{i}", "join")
    graph.add_node("join", lambda s: {"joins": [len(s["items"])]})
    graph.add_edge(START, "fan")
    graph.add_conditional_edges(
        "join", lambda s: "fan" if len(s["joins"]) < rounds else END, ["fan", END]
    )
    out = graph.compile().invoke({})
    assert out["joins"] == [width * r for r in range(1, rounds + 1)]
    assert out["items"] == list(range(width)) * rounds


def test_a_join_waits_for_its_longest_branches_among_many_short_ones() -> None:
    ran: list[str] = []

    def node(name: str) -> Callable[[Any], dict[str, Any]]:
        def run(state: Any) -> dict[str, Any]:
            ran.append(name)
            return {"path": [name]}

        return run

    graph = StateGraph(key_strategies={"path": KeyStrategy.APPEND})
    graph.add_node("fan", node("fan")).add_node("join", node("join"))
    graph.add_edge(START, "fan").add_edge("join", END)
    for i in range(WIDE):  # every third branch is two nodes long, every seventh three
        chain = [f"w{i}"] + [f"w{i}x{k}" for k in range(int(i % 3 == 0) + int(i % 7 == 0))]
        for name in chain:
            graph.add_node(name, node(name))
        graph.add_edge("fan", chain[0]).add_edge(chain[-1], "join")
        for a, b in itertools.pairwise(chain):
            graph.add_edge(a, b)
    out = graph.compile().invoke({})
    assert ran.count("join") == 1 and ran[-1] == "join"
    assert out["path"][-1] == "join" and len(out["path"]) == len(set(out["path"]))
    assert len(ran) == 2 + WIDE + len([i for i in range(WIDE) if i % 3 == 0]) + WIDE // 7 + 1


def test_in_a_cycle_the_nearer_upstream_node_runs_first() -> None:
    graph = StateGraph(key_strategies={"path": KeyStrategy.APPEND})
    for name in ("a", "b", "c"):
        graph.add_node(name, lambda s, name=name: {"path": [name]})
    graph.add_edge(START, "a").add_edge(START, "c").add_edge("a", "b").add_edge("b", "c")
    graph.add_conditional_edges("c", lambda s: "a" if s["path"].count("c") < 2 else END, ["a", END])
    # c reaches a in one edge, a reaches c in two: c goes first and a runs once after it
    assert graph.compile().invoke({})["path"] == ["c", "a", "b", "c"]


def test_two_writers_of_a_replace_key_among_many_are_still_refused() -> None:
    graph = StateGraph(key_strategies={"items": KeyStrategy.APPEND})
    graph.add_node("fan", lambda s: None)
    for i in range(WIDE):
        update = {"answer": i} if i in (100, 200) else {"items": [i]}
        graph.add_node(f"w{i}", lambda s, update=update: update)
        graph.add_edge("fan", f"w{i}").add_edge(f"w{i}", END)
    graph.add_edge(START, "fan")
    with pytest.raises(InvalidUpdateError, match="node 'w100' and node 'w200' both wrote") as info:
        graph.compile().invoke({})
    assert info.value.key == "answer" and info.value.node == "w200"


class _CountingList(list[Any]):
    """A list that counts the copies ``+`` makes of it (and of the lists it makes)."""

    adds = 0

    def __add__(self, other: Any) -> Any:
        type(self).adds += 1
        return _CountingList(list.__add__(self, other))


def test_many_appends_in_one_step_copy_the_old_list_once_and_leave_it_unchanged() -> None:
    start = _CountingList(["start"])
    _CountingList.adds = 0
    out = _wide(WIDE).invoke({"items": Overwrite(start)})  # the state holds ``start`` itself
    assert _CountingList.adds == 1  # not once per writer
    assert start == ["start"]  # the list the nodes saw is not extended in place
    assert out["items"] == ["start", *range(WIDE)] and out["joins"] == [WIDE + 1]


def test_an_append_after_an_overwrite_in_one_update_leaves_the_given_list_unchanged() -> None:
    given = ["mine"]
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node(
        "a", lambda s: Updates({"log": ["x"]}, {"log": Overwrite(given)}, {"log": ["y"]})
    )
    graph.add_edge(START, "a").add_edge("a", END)
    assert graph.compile().invoke({"log": ["old"]})["log"] == ["mine", "y"]
    assert given == ["mine"]


def test_a_wide_step_asks_the_pool_for_at_most_one_job_per_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pool = thread_pool()
    submit = pool.submit
    jobs: list[Any] = []

    def counting(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        jobs.append(fn)
        return submit(fn, *args, **kwargs)

    monkeypatch.setattr(pool, "submit", counting)
    out = _wide(WIDE).invoke({})
    assert out["items"] == list(range(WIDE))
    assert 1 <= len(jobs) <= pool._max_workers  # not one per node


def _blocks(graph: nx.DiGraph, node: str, other: str) -> bool:
    """The join rule spelt out pairwise: ``other`` holds ``node`` back."""
    try:
        to_node = nx.shortest_path_length(graph, other, node)
    except nx.NetworkXNoPath:
        return False
    try:
        back = nx.shortest_path_length(graph, node, other)
    except nx.NetworkXNoPath:
        return True
    return bool(to_node < back)


@pytest.mark.parametrize("seed", range(6))
def test_each_nodes_blockers_are_the_nodes_that_would_hold_it_back(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(14)]
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((a, b) for a in nodes for b in nodes if a != b and rng.random() < 0.12)
    reach = Reachability(graph)
    for node in nodes:
        expected = {o for o in nodes if o != node and _blocks(graph, node, o)}
        assert reach.blockers(node) == expected, node
