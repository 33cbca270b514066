"""Two servers on one Redis (threads and run records there, runs in each server's process)
never run one thread at once: a run asked of the second while the first runs the thread
waits for the thread's lease, then goes on from where the first left it; and each serves a
thread the other made, by the assistant that ran it."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

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

TIMEOUT = 30.0


@dataclass
class Gate:
    """The tool holds each run until the test lets it go (``release``; ``entered`` once one
    holds), but for those whose message is in ``free``."""

    entered: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    free: set[str] = field(default_factory=set)


def held_agent(saver: RedisSaver, gate: Gate) -> ReactAgent:
    @tool
    async def hold(note: str) -> str:
        """Holds the run until the test lets it go."""
        if note not in gate.free:
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
    """Two apps on two live uvicorns, threads and run records in one Redis (no queue: each
    runs the runs it accepts), serving ``held_agent`` as "held"."""
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    gate = Gate()
    with ExitStack() as stack:
        urls = []
        for _ in range(2):
            saver = RedisSaver.from_url(redis_url, key_prefix=prefix)
            store = RedisRunStore.from_url(redis_url, prefix=f"{prefix}:runs")
            app = create_app({"held": held_agent(saver, gate)}, runs=store)
            closing_on_its_loop(app, saver, store)
            urls.append(stack.enter_context(live_server(app)))
        try:
            yield urls[0], urls[1], gate
        finally:
            gate.release.set()


def closing_on_its_loop(app: Any, *owned: Any) -> None:
    """Close ``owned`` (their async clients are bound to the server's loop) when ``app``
    shuts down, on its loop."""
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with inner(app):
            yield
        for thing in owned:
            await thing.aclose()

    app.router.lifespan_context = lifespan


def texts(base: str, thread: str) -> list[str]:
    state = httpx.get(f"{base}/threads/{thread}/state", timeout=TIMEOUT).json()
    return [m["content"] for m in (state["values"] or {}).get("messages", [])]


def said(text: str) -> dict[str, Any]:
    return {"assistant_id": "held", "input": {"messages": [{"role": "user", "content": text}]}}


def test_two_servers_never_run_one_thread_at_once(redis_url: str) -> None:
    with two_servers(redis_url) as (first, second, gate):
        thread = httpx.post(f"{first}/threads", json={}).json()["thread_id"]
        one = httpx.post(f"{first}/threads/{thread}/runs", json=said("one"), timeout=TIMEOUT).json()
        assert gate.entered.wait(TIMEOUT)
        # the second server knows the thread (its record is in Redis), and waits for it
        two = httpx.post(f"{second}/threads/{thread}/runs", json=said("two"), timeout=TIMEOUT)
        assert two.status_code == 200, two.text
        waiting = httpx.get(f"{second}/threads/{thread}/runs/{two.json()['run_id']}").json()
        assert texts(first, thread) == ["one", ""]  # nothing of "two" while "one" runs
        gate.release.set()
        for base, run in ((first, one), (second, two.json())):
            httpx.get(f"{base}/threads/{thread}/runs/{run['run_id']}/join", timeout=TIMEOUT)
        statuses = [
            httpx.get(f"{base}/threads/{thread}/runs/{run['run_id']}").json()["status"]
            for base, run in ((first, one), (second, two.json()))
        ]
        final = texts(second, thread)
    assert waiting["status"] in ("pending", "running")
    assert statuses == ["success", "success"]
    assert final == [
        "one",
        "",
        "held one",
        "done: held one",
        "two",
        "",
        "held two",
        "done: held two",
    ]
