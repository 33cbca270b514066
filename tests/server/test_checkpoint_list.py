"""``GET /threads/{id}/checkpoints``: a thread's checkpoints as a light list (no states), for
a history view: newest first, each with its step, the nodes that wrote it, what runs next,
its time and the state keys it changed; paged with ``before``; the state at any of them
from ``GET /threads/{id}/state/{checkpoint_id}``; and a fork from one of them."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
from langgraph_sdk import get_sync_client

from checkpoint import MemorySaver
from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall, UserMessage
from graph_agent.graph import END, START, StateGraph
from graph_agent.server import create_app
from graph_agent.server._wire_history import changed_keys

from .conftest import live_server
from .served_kit import get_weather


def said(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def weather_agent() -> ReactAgent:
    ask = AssistantMessage(
        "",
        tool_calls=[ToolCall(id="c1", name="get_weather", arguments=json.dumps({"city": "Oslo"}))],
    )
    return ReactAgent(
        name="weather",
        model=ScriptedChatModel([ask, "Rain in Oslo.", "Sun in Rome."]),
        tools=[get_weather],
        saver=MemorySaver(),
    )


def test_a_threads_checkpoints_are_listed_newest_first_with_what_each_changed() -> None:
    with live_server(create_app({"weather": weather_agent()})) as url:
        with get_sync_client(url=url) as client:
            thread = client.threads.create()["thread_id"]
            client.runs.wait(thread, "weather", input=said("Oslo?"))
            history = client.threads.get_history(thread, limit=10)
        listed = httpx.get(f"{url}/threads/{thread}/checkpoints").json()
        first_two = httpx.get(f"{url}/threads/{thread}/checkpoints", params={"limit": 2}).json()
        rest = httpx.get(
            f"{url}/threads/{thread}/checkpoints",
            params={"before": first_two[-1]["checkpoint_id"]},
        ).json()
        at = listed[2]["checkpoint_id"]
        state_there = httpx.get(f"{url}/threads/{thread}/state/{at}").json()
        too_many = httpx.get(f"{url}/threads/{thread}/checkpoints", params={"limit": 1001})
        missing = httpx.get(f"{url}/threads/nobody/checkpoints")
    assert [e["checkpoint_id"] for e in listed] == [h["checkpoint_id"] for h in history]
    assert [e["step"] for e in listed] == [3, 2, 1, 0]
    assert [e["nodes"] for e in listed] == [["model"], ["tools"], ["model"], []]
    assert [e["source"] for e in listed] == ["loop", "loop", "loop", "input"]
    assert [e["next"] for e in listed] == [[], ["model"], ["tools"], ["model"]]
    assert all(e["changed"] == ["messages"] for e in listed), listed  # the input's: all its keys
    assert listed[-1]["parent_checkpoint_id"] is None
    assert [e["parent_checkpoint_id"] for e in listed[:-1]] == [
        e["checkpoint_id"] for e in listed[1:]
    ]
    assert first_two + rest == listed
    assert [m["type"] for m in state_there["values"]["messages"]] == ["human", "ai"]
    assert too_many.status_code == 422 and "limit" in too_many.json()["detail"]
    assert missing.status_code == 404


def test_a_fork_from_an_earlier_checkpoint_is_listed_beside_the_old_branch() -> None:
    with live_server(create_app({"weather": weather_agent()})) as url:
        with get_sync_client(url=url) as client:
            thread = client.threads.create()["thread_id"]
            client.runs.wait(thread, "weather", input=said("Oslo?"))
            listed = httpx.get(f"{url}/threads/{thread}/checkpoints").json()
            asked = next(e for e in listed if e["nodes"] == ["model"] and e["next"] == ["tools"])
            # fork: the model's question answered differently, from before the tool ran
            client.threads.update_state(
                thread,
                {"messages": [{"role": "ai", "content": "Let me guess: sun.", "id": "x"}]},
                checkpoint_id=asked["parent_checkpoint_id"],
                as_node="model",
            )
        after = httpx.get(f"{url}/threads/{thread}/checkpoints").json()
    fork = after[0]
    assert fork["parent_checkpoint_id"] == asked["parent_checkpoint_id"]
    assert fork["nodes"] == ["model"] and fork["changed"] == ["messages"]
    assert [e["checkpoint_id"] for e in after[1:]] == [e["checkpoint_id"] for e in listed]


def test_changed_keys_compares_lists_by_length_and_last_item() -> None:
    one = [UserMessage("a")]
    assert changed_keys({"m": one, "n": 1}, {"m": one, "n": 1}) == []
    assert changed_keys({"m": [*one, UserMessage("b")]}, {"m": one}) == ["m"]
    assert changed_keys({"m": [UserMessage("c")]}, {"m": one}) == ["m"]
    assert changed_keys({"n": 2, "new": 0}, {"n": 1, "gone": 0}) == ["gone", "n", "new"]
    assert changed_keys({"s": "ab"}, {"s": "ac"}) == ["s"]


def test_a_thousand_checkpoints_are_listed_at_once() -> None:
    """Not a bound on time (machines are noisy): it prints what listing took."""
    graph = StateGraph()
    graph.add_node("count", lambda state: {"n": state.get("n", 0) + 1})
    graph.add_edge(START, "count")
    graph.add_edge("count", END)
    counter = graph.compile(saver=MemorySaver())
    with live_server(create_app({"counter": counter})) as url:
        with get_sync_client(url=url) as client:
            thread = client.threads.create()["thread_id"]
            for _ in range(500):
                client.runs.wait(thread, "counter", input={})
        started = time.perf_counter()
        listed = httpx.get(f"{url}/threads/{thread}/checkpoints", params={"limit": 1000}).json()
        took = time.perf_counter() - started
    assert len(listed) == 1000
    assert listed[0]["changed"] == ["n"] and listed[0]["nodes"] == ["count"]
    print(f"1,000 checkpoints listed in {took * 1000:.0f} ms")
