"""The async path never blocks the event loop: ``await RemoteA2AAgent.aconnect(url)`` reads
the card and the extended card, and ``acall`` / ``astream_events`` talk to the remote, all
on the loop. The remote here answers a request only once a task on the client's loop has
let it in, which that task can only do while the loop is free: a client that waited for
an answer by blocking its loop (a sync HTTP call, a blocking resolve) would get a 503."""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any

import pytest

from graph_agent import Command
from graph_agent.a2a import RemoteA2AAgent
from graph_agent.errors import AgentBuildError

from ._remote_server import app, served

TOKEN = "s3cret"
MEMBER = {"Authorization": f"Bearer {TOKEN}"}
PATIENCE = 5.0  # seconds a request waits for the client's loop before it is refused


class Gate:
    """An ASGI app in front of ``inner``: each HTTP request waits until ``let_in`` (a task
    on the client's event loop) lets it through; after ``PATIENCE`` it is a 503."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.waiting: queue.Queue[threading.Event | None] = queue.Queue()
        self.let_through: list[str] = []  # "METHOD path" of each request let in

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            door = threading.Event()
            self.waiting.put(door)
            if not await asyncio.to_thread(door.wait, PATIENCE):
                body = b"the client's event loop was blocked: nobody let this request in"
                await send({"type": "http.response.start", "status": 503, "headers": []})
                await send({"type": "http.response.body", "body": body})
                return
            self.let_through.append(f"{scope['method']} {scope['path']}")
        await self.inner(scope, receive, send)

    async def let_in(self) -> None:
        """Let each request in, from the running loop (until ``close``)."""
        loop = asyncio.get_running_loop()
        while (door := await loop.run_in_executor(None, self.waiting.get)) is not None:
            door.set()

    def close(self) -> None:
        self.waiting.put(None)


def test_aconnect_and_the_async_calls_never_block_the_loop() -> None:
    gate = Gate(None)

    def make(url: str) -> Gate:
        gate.inner = app(url, token=TOKEN, extended=True)
        return gate

    with served(make) as url:

        async def main() -> tuple[str, str, str]:
            letting_in = asyncio.create_task(gate.let_in())
            try:
                remote = await RemoteA2AAgent.aconnect(url, headers=MEMBER)
                first = await remote.acall("hello")
                thread = {"thread_id": "booking"}
                events = [e async for e in remote.astream_events("book a flight", thread)]
                assert events, "the stream said nothing"
                state = await remote.aget_state(thread)
                assert state is not None
                (pause,) = state.interrupts
                booked = await remote.acall(Command(resume="Oslo"), thread)
                return first.text, pause.value["question"], booked.text
            finally:
                gate.close()
                await letting_in

        first, question, booked = asyncio.run(main())
    assert first == "Member echo: hello (turn 1)"  # the extended card's interface
    assert question == "Which city?"
    assert booked.startswith("Booked for Oslo (task ")
    assert gate.let_through[:2] == ["GET /.well-known/agent-card.json", "POST /"]
    assert set(gate.let_through[2:]) == {"POST /members"}


def test_the_constructor_works_where_a_loop_runs_as_in_a_notebook() -> None:
    """As every sync call of ours where this thread runs a loop (a notebook's cell): the
    card is read on a thread of its own, this loop waiting for it."""
    with served(app) as url:

        async def main() -> RemoteA2AAgent:
            return RemoteA2AAgent(url)

        remote = asyncio.run(main())
        assert remote.name == "travel" and remote.card.name == "travel"


def test_aconnect_checks_its_arguments_before_anything_is_sent() -> None:
    with pytest.raises(AgentBuildError) as raised:
        asyncio.run(RemoteA2AAgent.aconnect("travel.example.com", timeout=0))
    message = str(raised.value)
    assert "url must be the agent's http(s) URL" in message
    assert "timeout must be a positive number of seconds, got 0" in message
