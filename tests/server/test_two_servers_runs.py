"""Two servers on one Redis, each running the runs it accepts in its own process (no
``--queue``), answer for each other's runs over the Agent Protocol (the official
``langgraph-sdk`` client): a run started on the first is followed live on the second (its
stream, its join), and cancelled there, with or without rollback."""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError

from .test_two_servers import TIMEOUT, Gate, two_servers


def said(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def entered(gate: Gate) -> None:
    assert await asyncio.to_thread(gate.entered.wait, TIMEOUT)


def contents(state: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["type"], m["content"]) for m in (state["values"] or {}).get("messages", [])]


def test_a_run_started_on_one_server_is_streamed_and_joined_live_on_the_other(
    redis_url: str,
) -> None:
    async def scenario(first: str, second: str, gate: Gate) -> dict[str, Any]:
        async with get_client(url=first) as one, get_client(url=second) as two:
            thread = (await one.threads.create())["thread_id"]
            modes = ["values", "updates"]
            run = await one.runs.create(thread, "held", input=said("wait"), stream_mode=modes)
            await entered(gate)  # it runs on the first, held in its tool
            parts = two.runs.join_stream(thread, run["run_id"]).__aiter__()
            seen = [await parts.__anext__()]  # the second follows it already
            joined = asyncio.create_task(two.runs.join(thread, run["run_id"]))
            early, _ = await asyncio.wait({joined}, timeout=0.5)  # it waits for the run
            gate.release.set()
            seen += [part async for part in parts]
            return {
                "early": early,
                "seen": seen,
                "joined": await asyncio.wait_for(joined, TIMEOUT),
                "first": await one.runs.join(thread, run["run_id"]),
                "statuses": [
                    (await c.runs.get(thread, run["run_id"]))["status"] for c in (one, two)
                ],
            }

    with two_servers(redis_url) as (first, second, gate):
        got = asyncio.run(scenario(first, second, gate))
    assert not got["early"]
    updates = [p.data for p in got["seen"] if p.event == "updates"]
    said_after = [m["content"] for u in updates for part in u.values() for m in part["messages"]]
    assert said_after[-2:] == ["held wait", "done: held wait"]  # what it did once let go
    values = [p.data for p in got["seen"] if p.event == "values"]
    answer = [("human", "wait"), ("ai", ""), ("tool", "held wait"), ("ai", "done: held wait")]
    assert [(m["type"], m["content"]) for m in values[-1]["messages"]] == answer
    assert got["joined"] == got["first"]
    assert [(m["type"], m["content"]) for m in got["joined"]["messages"]] == answer
    assert got["statuses"] == ["success", "success"]


def test_a_run_started_on_one_server_is_cancelled_on_the_other(redis_url: str) -> None:
    async def scenario(first: str, second: str, gate: Gate) -> dict[str, Any]:
        async with get_client(url=first) as one, get_client(url=second) as two:
            thread = (await one.threads.create())["thread_id"]
            run = await one.runs.create(thread, "held", input=said("wait"))
            await entered(gate)
            await two.runs.cancel(thread, run["run_id"], wait=True)
            return {
                "statuses": [
                    (await c.runs.get(thread, run["run_id"]))["status"] for c in (one, two)
                ],
                "state": await two.threads.get_state(thread),
            }

    with two_servers(redis_url) as (first, second, gate):
        got = asyncio.run(scenario(first, second, gate))
    assert got["statuses"] == ["interrupted", "interrupted"]
    messages = got["state"]["values"]["messages"]
    # its tool call answered (a model provider accepts the thread as it is)
    assert [m["type"] for m in messages] == ["human", "ai", "tool"]
    assert messages[-1]["tool_call_id"] == "call_wait"
    assert messages[-1]["content"].startswith("Cancelled")


def test_a_rollback_cancel_on_the_other_server_removes_what_the_run_wrote(
    redis_url: str,
) -> None:
    async def scenario(first: str, second: str, gate: Gate) -> dict[str, Any]:
        async with get_client(url=first) as one, get_client(url=second) as two:
            thread = (await one.threads.create())["thread_id"]
            gate.free.add("before")
            await one.runs.wait(thread, "held", input=said("before"))
            run = await one.runs.create(thread, "held", input=said("wait"))
            await entered(gate)
            await two.runs.cancel(thread, run["run_id"], wait=True, action="rollback")
            return {
                "state": await one.threads.get_state(thread),
                "status": (await one.runs.get(thread, run["run_id"]))["status"],
            }

    with two_servers(redis_url) as (first, second, gate):
        got = asyncio.run(scenario(first, second, gate))
    assert got["status"] == "interrupted"
    assert contents(got["state"]) == [
        ("human", "before"),
        ("ai", ""),
        ("tool", "held before"),
        ("ai", "done: held before"),
    ]


def test_a_thread_busy_on_one_server_is_busy_on_the_other_and_interrupted_from_it(
    redis_url: str,
) -> None:
    async def scenario(first: str, second: str, gate: Gate) -> dict[str, Any]:
        async with get_client(url=first) as one, get_client(url=second) as two:
            thread = (await one.threads.create())["thread_id"]
            run = await one.runs.create(thread, "held", input=said("wait"))
            await entered(gate)
            busy = (await two.threads.get(thread))["status"]
            try:
                await two.runs.create(
                    thread, "held", input=said("next"), multitask_strategy="reject"
                )
                refused = None
            except ConflictError as error:
                refused = error
            gate.free.add("next")
            answer = await two.runs.wait(
                thread, "held", input=said("next"), multitask_strategy="interrupt"
            )
            return {
                "busy": busy,
                "refused": refused,
                "answer": answer,
                "first": (await one.runs.get(thread, run["run_id"]))["status"],
            }

    with two_servers(redis_url) as (first, second, gate):
        got = asyncio.run(scenario(first, second, gate))
    assert got["busy"] == "busy"
    assert got["refused"] is not None  # 409: busy with the first server's run
    assert got["first"] == "interrupted"
    assert [(m["type"], m["content"]) for m in got["answer"]["messages"]][-4:] == [
        ("human", "next"),
        ("ai", ""),
        ("tool", "held next"),
        ("ai", "done: held next"),
    ]
