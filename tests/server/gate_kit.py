"""A served agent whose runs stay busy, in a tool, until the test lets them go or the server
is asked to cancel them, and what a client reads over plain HTTP (runs, streams), for the
tests of what a client sees of the server's runs (test_runs.py, test_promises.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from checkpoint import MemorySaver
from graph_agent import (
    AssistantMessage,
    ChatResponse,
    FunctionChatModel,
    Prompt,
    ReactAgent,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent.server import create_app

from .conftest import live_server

TIMEOUT = 20.0  # seconds any wait of these tests gives up after


class StreamingOnlyModel:
    """A model a served run calls as the server does (``astream``); its other calls fail
    the test. Subclasses write ``astream``."""

    provider_name = "held"

    def call(self, prompt: Prompt) -> ChatResponse:
        raise AssertionError("a served run is async")

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        raise AssertionError("a served run is async")

    async def acall(self, prompt: Prompt) -> ChatResponse:
        raise AssertionError("a served run streams its model")


class Gate:
    """Holds each run of ``agent()`` in its ``hold`` tool while closed.

    ``entered`` counts the calls that reached the tool; ``release`` lets them all go. The
    server's cancels (a cancel, ``interrupt``/``rollback``, a deleted thread) open it too,
    once the cancel was asked (a cancelled run stops its tool at once; the gate opens only
    after the ask, so that no run finishes before its cancel).
    """

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = 0
        self._lock = threading.Lock()

    def close(self) -> None:
        self.release.clear()

    def open(self) -> None:
        self.release.set()

    def wait_entered(self, count: int) -> None:
        """Until ``count`` calls have reached the tool in all."""
        deadline = time.monotonic() + TIMEOUT
        while self.entered < count:
            assert time.monotonic() < deadline, f"only {self.entered} of {count} calls came"
            time.sleep(0.005)

    def agent(self, name: str = "held") -> ReactAgent:
        """An agent that calls ``hold`` for each user message, then answers ``done: <it>``."""
        gate = self

        @tool
        async def hold(note: str) -> str:
            """Holds the run until the gate opens."""
            with gate._lock:
                gate.entered += 1
            assert await asyncio.to_thread(gate.release.wait, TIMEOUT), "the gate never opened"
            return f"held {note}"

        def reply(prompt: Prompt) -> AssistantMessage:
            last = prompt.messages[-1]
            if isinstance(last, UserMessage):
                arguments = json.dumps({"note": last.text})
                return AssistantMessage(
                    "",
                    tool_calls=[ToolCall(id=f"call_{last.text}", name="hold", arguments=arguments)],
                )
            assert isinstance(last, ToolResponseMessage)
            return AssistantMessage(f"done: {last.responses[0].response_data}")

        return ReactAgent(
            name=name, model=FunctionChatModel(reply), tools=[hold], saver=MemorySaver()
        )

    def watch(self, app: Any) -> None:
        """Open the gate whenever ``app``'s server is asked to cancel a run, once asked."""
        manager = app.state.server.runs
        cancel = manager.cancel
        gate = self

        async def cancel_then_open(run: Any, *, rollback: bool = False, wait: bool = True) -> None:
            await cancel(run, rollback=rollback, wait=False)  # asked: its task is cancelled
            gate.open()
            if wait and run.task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await run.task

        manager.cancel = cancel_then_open


@dataclass
class Served:
    url: str
    http: httpx.Client
    gate: Gate

    def thread(self) -> str:
        answer = self.http.post("/threads", json={})
        assert answer.status_code == 200, answer.text
        return str(answer.json()["thread_id"])

    def start(self, thread: str, text: str, **fields: Any) -> httpx.Response:
        """``POST /threads/{thread}/runs`` of a user message ``text``."""
        body = {"assistant_id": "held", "input": {"messages": [{"role": "user", "content": text}]}}
        return self.http.post(f"/threads/{thread}/runs", json={**body, **fields})

    def run(self, thread: str, run_id: str) -> dict[str, Any]:
        answer = self.http.get(f"/threads/{thread}/runs/{run_id}")
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def join(self, thread: str, run_id: str) -> Any:
        return self.http.get(f"/threads/{thread}/runs/{run_id}/join").json()

    def texts(self, thread: str) -> list[str]:
        """The contents of the thread's messages, as its state says."""
        state = self.http.get(f"/threads/{thread}/state").json()
        return [m["content"] for m in (state["values"] or {}).get("messages", [])]

    def events(
        self, thread: str, run_id: str, last_event_id: str | None = None
    ) -> list[tuple[str, str, Any]]:
        """The run's stream as a client rejoins it: (id, event, data) of each event, read
        until the stream ends."""
        headers = {} if last_event_id is None else {"Last-Event-ID": last_event_id}
        with self.http.stream(
            "GET", f"/threads/{thread}/runs/{run_id}/stream", headers=headers
        ) as answer:
            assert answer.status_code == 200, answer.read()
            return sse(answer.iter_lines())


def sse(lines: Iterator[str]) -> list[tuple[str, str, Any]]:
    """(id, event, data) of each Server-Sent Event in ``lines`` (heartbeats left out)."""
    events: list[tuple[str, str, Any]] = []
    fields: dict[str, str] = {}
    for line in lines:
        if not line:
            if "event" in fields:
                events.append((fields.get("id", ""), fields["event"], json.loads(fields["data"])))
            fields = {}
        elif not line.startswith(":"):
            key, _, value = line.partition(": ")
            fields[key] = value
    return events


@contextlib.contextmanager
def served(**agents: Any) -> Iterator[Served]:
    """``Gate().agent()`` served as ``held`` (and ``agents`` beside it) by a real uvicorn,
    with an HTTP client on it."""
    gate = Gate()
    gate.open()
    app = create_app({"held": gate.agent(), **agents})
    gate.watch(app)
    with live_server(app) as url, httpx.Client(base_url=url, timeout=TIMEOUT) as http:
        try:
            yield Served(url, http, gate)
        finally:
            gate.open()  # nothing stays held when a test fails
