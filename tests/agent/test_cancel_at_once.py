"""Cancelling an async run (its ``acall``/``astream``/``astream_events`` task) stops the model
call and async tools at once, and the thread keeps what the user saw: the part of the answer
already streamed (``metadata["cut"]``), every tool call answered (a finished one, a sync
tool's thread that ran on to its end, with its result; the rest as cancelled), so the next
run's request is one an OpenAI-compatible server accepts."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import (
    AssistantMessage,
    ChatResponse,
    OpenAIChatModel,
    Prompt,
    ReactAgent,
    ScriptedChatModel,
    SequentialAgent,
    ToolCall,
    ToolResponseMessage,
    tool,
)
from graph_agent.agent._unanswered import CANCELLED_TEXT
from tests.agent.test_no_dangling_calls import StrictServer

WAIT = 10.0  # seconds before a test gives up: a cancel that waits for the model fails here


class HeldModel:
    """Streams ``first`` (when given), then holds its answer until the run is cancelled; the
    next calls answer ``later`` at once. ``streamed`` is set once the first chunk went out
    (or, without one, once the call began); ``cancelled`` once the held call was cancelled."""

    provider_name = "held"

    def __init__(self, first: str, later: AssistantMessage | str = "Fine.") -> None:
        self.first = first
        self.later = later if isinstance(later, AssistantMessage) else AssistantMessage(later)
        self.calls = 0
        self.streamed = asyncio.Event()
        self.cancelled = False

    def call(self, prompt: Prompt) -> ChatResponse:
        raise AssertionError("only async runs are cancelled")

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        raise AssertionError("only async runs are cancelled")

    async def _hold(self) -> None:
        self.streamed.set()
        try:
            await asyncio.Event().wait()  # never set: only a cancel ends it
        except asyncio.CancelledError:
            self.cancelled = True
            raise

    async def acall(self, prompt: Prompt) -> ChatResponse:
        self.calls += 1
        if self.calls > 1:
            return ChatResponse.of(self.later, "tool_calls" if self.later.tool_calls else "stop")
        await self._hold()
        raise AssertionError("unreachable")

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        self.calls += 1
        if self.calls > 1:
            yield ChatResponse.of(self.later, "stop")
            return
        if self.first:
            yield ChatResponse.of(AssistantMessage(self.first))
        await self._hold()


async def cancelled(run: Any, ready: asyncio.Event | threading.Event) -> None:
    """Start ``run`` as a task, cancel it once ``ready`` is set, and wait for it to end:
    within ``WAIT``, or the cancel waited for what it should have stopped."""
    task = asyncio.ensure_future(run)
    if isinstance(ready, threading.Event):
        assert await asyncio.to_thread(ready.wait, WAIT)
    else:
        await asyncio.wait_for(ready.wait(), WAIT)
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=WAIT)
    assert done, "the cancelled run did not end: the cancel waited for its step"
    assert task.cancelled()


def drive(agent: Any, how: str, text: str, config: dict[str, Any]) -> Any:
    """The run of ``text`` through ``how`` (``acall``, ``astream``, ``astream_events``)."""
    if how == "acall":
        return agent.acall(text, config)

    async def read() -> None:
        async for _ in getattr(agent, how)(text, config):
            pass

    return read()


def history_sources(agent: ReactAgent, config: dict[str, Any]) -> list[Any]:
    return [
        (c.metadata["source"], c.metadata["nodes"])
        for c in reversed(list(agent.graph.get_state_history(config)))
    ]


def test_a_cancel_mid_answer_keeps_the_streamed_part_marked_cut() -> None:
    model = HeldModel("The answer is")
    agent = ReactAgent(name="a", model=model, saver=MemorySaver())
    config = {"thread_id": "cut"}
    asyncio.run(cancelled(drive(agent, "astream_events", "Tell me", config), model.streamed))
    assert model.cancelled  # the model call itself was stopped
    snapshot = agent.get_state(config)
    messages = snapshot.values["messages"]
    assert [type(m).__name__ for m in messages] == ["UserMessage", "AssistantMessage"]
    assert messages[-1].text == "The answer is"
    assert messages[-1].metadata["cut"] is True
    assert snapshot.next == ()  # the turn ended there
    # one checkpoint per step: the input's, then the model step's (a normal one)
    assert history_sources(agent, config) == [("input", []), ("loop", ["model"])]


@pytest.mark.parametrize("how", ["acall", "astream", "astream_events"])
def test_a_cancel_before_any_text_stores_no_answer_and_a_resume_asks_again(how: str) -> None:
    model = HeldModel("", later="Here it is.")
    agent = ReactAgent(name="a", model=model, saver=MemorySaver())
    config = {"thread_id": "nothing-yet"}

    async def scenario() -> str:
        await cancelled(drive(agent, how, "Tell me", config), model.streamed)
        snapshot = await agent.aget_state(config)
        assert [type(m).__name__ for m in snapshot.values["messages"]] == ["UserMessage"]
        assert snapshot.next == ("model",)
        return (await agent.acall(None, config)).text

    assert asyncio.run(scenario()) == "Here it is."
    assert model.cancelled


def tools_agent(
    model: Any,
    saver: MemorySaver,
    paid: list[str],
    started: threading.Event,
    release: threading.Event,
) -> ReactAgent:
    @tool
    async def quick() -> str:
        """Answers at once."""
        return "quick result"

    @tool
    async def slow() -> str:
        """Runs until its run is cancelled."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    @tool
    def pay(amount: int) -> str:
        """A sync tool (a worker thread, which cannot be stopped): ends when released."""
        assert release.wait(WAIT)
        paid.append(f"paid {amount}")
        return f"paid {amount}"

    return ReactAgent(name="a", model=model, tools=[quick, slow, pay], saver=saver)


ASKS = AssistantMessage(
    "Let me check.",
    tool_calls=(
        ToolCall(id="c1", name="quick", arguments="{}"),
        ToolCall(id="c2", name="slow", arguments="{}"),
        ToolCall(id="c3", name="pay", arguments=json.dumps({"amount": 5})),
    ),
)


class AsksThenHolds(HeldModel):
    """Asks for the three tools (streamed or not), then answers."""

    async def acall(self, prompt: Prompt) -> ChatResponse:
        self.calls += 1
        return ChatResponse.of(ASKS if self.calls == 1 else self.later, "stop")

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        yield await self.acall(prompt)


@pytest.mark.parametrize("how", ["acall", "astream", "astream_events"])
@pytest.mark.parametrize("then", ["new input", "resume"])
def test_a_cancel_during_tools_answers_every_call_and_the_provider_accepts_the_thread(
    how: str, then: str, server: StrictServer
) -> None:
    paid: list[str] = []
    started, release = threading.Event(), threading.Event()
    saver = MemorySaver()
    agent = tools_agent(AsksThenHolds(""), saver, paid, started, release)
    config = {"thread_id": "tools"}

    async def scenario() -> None:
        task = asyncio.ensure_future(drive(agent, how, "Check and pay", config))
        assert await asyncio.to_thread(started.wait, WAIT)
        task.cancel()
        release.set()  # the sync tool's thread runs on to its end: its result is stored
        done, _ = await asyncio.wait([task], timeout=WAIT)
        assert done and task.cancelled()

    asyncio.run(scenario())
    assert paid == ["paid 5"]
    snapshot = agent.get_state(config)
    answered = snapshot.values["messages"][-1]
    assert isinstance(answered, ToolResponseMessage)
    assert {r.id: r.response_data for r in answered.responses} == {
        "c1": "quick result",  # finished before the cancel
        "c2": CANCELLED_TEXT,  # stopped at once
        "c3": "paid 5",  # the thread's real result, not "cancelled"
    }
    assert answered.metadata["cancelled"] is True
    assert snapshot.next == ("model",)
    assert history_sources(agent, config) == [
        ("input", []), ("loop", ["model"]), ("loop", ["tools"]),
    ]  # fmt: skip

    # the next run, on a model that refuses a thread with an unanswered call
    strict = OpenAIChatModel("m", server.url, "sk-test", max_retries=0)
    server.models.append(strict)
    follow = tools_agent(strict, saver, paid, started, release)
    answer = follow.call("and now?" if then == "new input" else None, config)
    assert answer.text.startswith("answer") and server.refused == []
    assert paid == ["paid 5"]  # never run again


@pytest.fixture
def server() -> Iterator[StrictServer]:
    strict = StrictServer()
    yield strict
    strict.close()


def test_a_cut_answer_is_accepted_by_the_provider_on_the_next_turn(server: StrictServer) -> None:
    model = HeldModel("Partly")
    saver = MemorySaver()
    agent = ReactAgent(name="a", model=model, saver=saver)
    config = {"thread_id": "cut-then-more"}
    asyncio.run(cancelled(drive(agent, "astream_events", "Tell me", config), model.streamed))
    strict = OpenAIChatModel("m", server.url, "sk-test", max_retries=0)
    server.models.append(strict)
    follow = ReactAgent(name="a", model=strict, saver=saver)
    assert follow.call("go on", config).text.startswith("answer")
    assert server.refused == []
    texts = [m.text for m in follow.get_state(config).values["messages"]]
    assert texts[:3] == ["Tell me", "Partly", "go on"]


def test_a_closed_stream_still_ends_its_step() -> None:
    """Closing a stream (``break``) is not a cancel: the run stops at its next step boundary,
    the model's whole answer kept (docs/streaming.md, "Closing a stream early")."""
    release = asyncio.Event()

    class Slow(HeldModel):
        async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
            yield ChatResponse.of(AssistantMessage("Whole "))
            await release.wait()
            yield ChatResponse.of(AssistantMessage("answer."))

    agent = ReactAgent(name="a", model=Slow(""), saver=MemorySaver())
    config = {"thread_id": "closed"}

    async def scenario() -> None:
        stream = agent.astream_events("Tell me", config)
        async for event in stream:
            if getattr(event, "kind", None) == "model_delta":
                break
        release.set()
        await stream.aclose()

    asyncio.run(scenario())
    last = agent.get_state(config).values["messages"][-1]
    assert last.text == "Whole answer." and "cut" not in last.metadata


def test_a_flow_keeps_its_sub_agents_cut_answer() -> None:
    """A sub-agent runs as a subgraph: its cut answer ends its node too, so the flow's thread
    holds it, and the flow goes on after that sub-agent."""
    model = HeldModel("A first draft")
    writer = ReactAgent(name="writer", model=model)
    reviewer = ReactAgent(name="reviewer", model=ScriptedChatModel(["Looks fine."]))
    flow = SequentialAgent(name="team", sub_agents=[writer, reviewer], saver=MemorySaver())
    config = {"thread_id": "flow"}
    asyncio.run(cancelled(drive(flow, "astream_events", "Write it", config), model.streamed))
    snapshot = flow.get_state(config)
    last = snapshot.values["messages"][-1]
    assert last.text == "A first draft" and last.metadata["cut"] is True
    assert snapshot.next == ("reviewer",)
    assert flow.call(None, config).text == "Looks fine."


class StallingHandler(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible server that streams "Hel" and then nothing, until the client
    goes away."""

    protocol_version = "HTTP/1.1"
    stop: threading.Event

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        first = {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hel"}}]}
        data = f"data: {json.dumps(first)}\n\n".encode()
        try:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
            while not self.stop.wait(0.05):  # the rest of the answer never comes
                pass
        except OSError:
            pass

    def log_message(self, *args: Any) -> None:
        pass


def test_an_openai_stream_cancelled_mid_answer_is_cut_at_once() -> None:
    stop = threading.Event()
    handler = type("Stalling", (StallingHandler,), {"stop": stop})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    model = OpenAIChatModel("m", url, "sk-test", max_retries=0)
    agent = ReactAgent(name="a", model=model, saver=MemorySaver())
    config = {"thread_id": "openai"}

    async def scenario() -> None:
        streamed = asyncio.Event()

        async def read() -> None:
            async for event in agent.astream_events("Say hello", config):
                if getattr(event, "kind", None) == "model_delta":
                    streamed.set()

        await cancelled(read(), streamed)
        await model.aclose()

    try:
        asyncio.run(scenario())
    finally:
        stop.set()
        model.close()
        httpd.shutdown()
        httpd.server_close()
    last = agent.get_state(config).values["messages"][-1]
    assert isinstance(last, AssistantMessage)
    assert last.text == "Hel" and last.metadata["cut"] is True
