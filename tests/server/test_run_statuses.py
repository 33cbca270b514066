"""How a run ends, as the runs service records it and as the Agent Protocol reads it: a
cancelled run is ``cancelled`` in its record (``interrupted`` on the wire, LangGraph's word),
and a run that runs past the service's ``run_timeout`` is stopped as a cancel stops it
(what it did is kept, the thread stays valid for the provider) and ends as ``timeout``,
its stream saying why."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from checkpoint import MemorySaver
from graph_agent import AssistantMessage, ChatResponse, Prompt, ReactAgent, ToolCall, tool
from graph_agent.runs import MemoryRunStore, RunService
from graph_agent.server import Server, create_app

from .conftest import live_server
from .gate_kit import StreamingOnlyModel

LONG = 60.0  # seconds: what the held model or tool would take; a run stopped then failed
WAIT = 30.0


class HeldModel(StreamingOnlyModel):
    """Streams the start of an answer, then holds (until cancelled); with ``call_tool``, it
    first calls the held tool, and answers once the tool answered."""

    def __init__(self, call_tool: bool = False) -> None:
        self.call_tool = call_tool
        self.cancelled = threading.Event()

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        if self.call_tool and len(prompt.messages) == 1:
            call = ToolCall(id="c1", name="slow_lookup", arguments=json.dumps({"q": "x"}))
            yield ChatResponse.of(AssistantMessage("", tool_calls=[call]))
            return
        yield ChatResponse.of(AssistantMessage("The answer starts"))
        try:
            await asyncio.sleep(LONG)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        yield ChatResponse.of(AssistantMessage(" and ends late."))


@tool
async def slow_lookup(q: str) -> str:
    """Looks something up, slowly."""
    await asyncio.sleep(LONG)
    return "found"


def serve(model: HeldModel, run_timeout: float | None) -> Any:
    agent = ReactAgent(name="held", model=model, tools=[slow_lookup], saver=MemorySaver())
    runs = RunService(MemoryRunStore(), run_timeout=run_timeout, **Server.run_options())
    return create_app({"held": agent}, runs=runs), runs


def stream(http: httpx.Client, thread: str, text: str) -> list[tuple[str, Any]]:
    body = {
        "assistant_id": "held",
        "input": {"messages": [{"role": "user", "content": text}]},
        "stream_mode": ["values"],
    }
    parts: list[tuple[str, Any]] = []
    with http.stream("POST", f"/threads/{thread}/runs/stream", json=body) as answer:
        event = ""
        for line in answer.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                parts.append((event, json.loads(line[6:])))
    return parts


def test_a_run_past_its_time_stops_at_once_keeps_what_was_streamed_and_ends_as_timeout() -> None:
    model = HeldModel()
    app, runs = serve(model, run_timeout=0.5)
    with live_server(app) as url, httpx.Client(base_url=url, timeout=WAIT) as http:
        thread = http.post("/threads", json={}).json()["thread_id"]
        began = time.monotonic()
        parts = stream(http, thread, "Tell me")
        took = time.monotonic() - began
        (run,) = http.get(f"/threads/{thread}/runs").json()
        state = http.get(f"/threads/{thread}/state").json()
        answer = http.get(f"/threads/{thread}/runs/{run['run_id']}/join").json()
        listed = http.get(f"/threads/{thread}/runs", params={"status": "timeout"}).json()
    assert took < LONG / 2 and model.cancelled.is_set()  # the model call itself was stopped
    assert run["status"] == "timeout" and [r["run_id"] for r in listed] == [run["run_id"]]
    (record,) = asyncio.run(runs.store.thread_runs(thread))
    assert record.status == "timeout" and "longer than 0.5 s" in (record.error or "")
    event, data = parts[-1]
    assert (event, data["error"]) == ("error", "TimeoutError")
    assert "longer than 0.5 s" in data["message"]
    assert answer == {"__error__": data}
    messages = state["values"]["messages"]
    assert [(m["type"], m["content"]) for m in messages] == [
        ("human", "Tell me"),
        ("ai", "The answer starts"),
    ]
    assert messages[-1]["response_metadata"]["cut"] is True


def test_a_run_past_its_time_in_a_tool_leaves_the_call_answered() -> None:
    app, _ = serve(HeldModel(call_tool=True), run_timeout=0.5)
    with live_server(app) as url, httpx.Client(base_url=url, timeout=WAIT) as http:
        thread = http.post("/threads", json={}).json()["thread_id"]
        parts = stream(http, thread, "Look it up")
        state = http.get(f"/threads/{thread}/state").json()
    assert parts[-1][0] == "error" and parts[-1][1]["error"] == "TimeoutError"
    messages = state["values"]["messages"]
    assert [m["type"] for m in messages] == ["human", "ai", "tool"]
    assert messages[-1]["tool_call_id"] == "c1"
    assert messages[-1]["content"].startswith("Cancelled")  # answered: the provider accepts it


def test_a_cancelled_run_is_cancelled_in_its_record_and_interrupted_on_the_wire() -> None:
    model = HeldModel()
    app, runs = serve(model, run_timeout=None)
    with live_server(app) as url, httpx.Client(base_url=url, timeout=WAIT) as http:
        thread = http.post("/threads", json={}).json()["thread_id"]
        body = {"assistant_id": "held", "input": {"messages": [{"role": "user", "content": "x"}]}}
        run = http.post(f"/threads/{thread}/runs", json=body).json()
        queued = http.post(f"/threads/{thread}/runs", json=body).json()
        http.post(f"/threads/{thread}/runs/{queued['run_id']}/cancel?wait=1")
        http.post(f"/threads/{thread}/runs/{run['run_id']}/cancel?wait=1")
        listed = http.get(f"/threads/{thread}/runs", params={"status": "interrupted"}).json()
    assert sorted(r["run_id"] for r in listed) == sorted([run["run_id"], queued["run_id"]])
    kept = asyncio.run(runs.store.thread_runs(thread))
    assert [r.status for r in kept] == ["cancelled", "cancelled"]


def test_a_run_timeout_is_seconds_more_than_zero() -> None:
    with pytest.raises(ValueError, match="run_timeout is seconds"):
        RunService(run_timeout=0)


SLOW = """
import asyncio
from graph_agent import FunctionChatModel, ReactAgent

async def reply(prompt):
    await asyncio.sleep(60)
    return "too late"

agent = ReactAgent(name="slow", model=FunctionChatModel(reply))
"""


def test_graph_agent_serve_stops_a_run_past_its_run_timeout(tmp_path: Any) -> None:
    from langgraph_sdk import get_sync_client

    from tests.redis_servers import free_port

    from .conftest import serve_process, stop_process

    module = tmp_path / "slow.py"
    module.write_text(SLOW)
    port = free_port()
    process = serve_process(module, tmp_path / "t.sqlite", port, "--run-timeout", "0.5")
    try:
        with get_sync_client(url=f"http://127.0.0.1:{port}") as client:
            thread = client.threads.create()["thread_id"]
            answer = client.runs.wait(
                thread,
                "slow",
                input={"messages": [{"role": "user", "content": "hi"}]},
                raise_error=False,
            )
            (run,) = client.runs.list(thread)
    finally:
        stop_process(process)
    assert run["status"] == "timeout"
    assert isinstance(answer, dict) and answer["__error__"]["error"] == "TimeoutError"
