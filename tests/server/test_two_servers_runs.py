"""Two servers on one Redis, each running the runs it accepts in its own process (no
``--queue``), answer for each other's runs over the Agent Protocol (the official
``langgraph-sdk`` client): a run started on the first is followed live on the second (its
stream, its join), and cancelled there, with or without rollback."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from langgraph_sdk import get_client

from checkpoint import RedisSaver
from graph_agent import (
    AssistantMessage,
    FunctionChatModel,
    Prompt,
    ReactAgent,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent.runs import RedisRunStore
from graph_agent.server import create_app

from .conftest import live_server
from .test_two_servers import closing_on_its_loop

TIMEOUT = 30.0


@dataclass
class Gate:
    """The tool holds a run that says "wait" until the test lets it go (``entered`` once it
    holds); the other runs go straight through."""

    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


def gated_agent(saver: RedisSaver, gate: Gate) -> ReactAgent:
    @tool
    async def hold(note: str) -> str:
        """Holds a run that says "wait" until the test lets it go."""
        if note == "wait":
            gate.entered.set()
            assert await asyncio.to_thread(gate.release.wait, TIMEOUT)
        return f"held {note}"

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, UserMessage):
            call = ToolCall(
                id=f"call_{last.text}", name="hold", arguments=json.dumps({"note": last.text})
            )
            return AssistantMessage("", tool_calls=[call])
        assert isinstance(last, ToolResponseMessage)
        return AssistantMessage(f"done: {last.responses[0].response_data}")

    return ReactAgent(name="held", model=FunctionChatModel(reply), tools=[hold], saver=saver)


@contextmanager
def two_servers(redis_url: str) -> Iterator[tuple[str, str, Gate]]:
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    gate = Gate()
    with ExitStack() as stack:
        urls = []
        for _ in range(2):
            saver = RedisSaver.from_url(redis_url, key_prefix=prefix)
            store = RedisRunStore.from_url(redis_url, prefix=f"{prefix}:runs")
            app = create_app({"held": gated_agent(saver, gate)}, runs=store)
            closing_on_its_loop(app, saver, store)
            urls.append(stack.enter_context(live_server(app)))
        try:
            yield urls[0], urls[1], gate
        finally:
            gate.release.set()


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
