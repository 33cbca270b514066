"""Served agents over A2A, driven by ``a2a-sdk``'s own client over a real uvicorn: the card,
a message sent (blocking) and streamed, a task read and listed, an interrupt as
``input-required`` answered by the next message, a cancel, a subscription; a task is a run
of the Agent Protocol (read there with ``langgraph-sdk``, and the other way round)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from checkpoint import MemorySaver
from graph_agent import ReactAgent, ScriptedChatModel
from graph_agent.graph import END, START, StateGraph, interrupt
from graph_agent.server import create_app
from hooks import HumanInTheLoopHook
from tests._needs import need_module

from .conftest import live_server
from .gate_kit import Gate
from .served_kit import refund
from .test_sdk_client import asks, weather_agent

need_module("a2a.client", "the a2a extra: pip install 'graph-agent[a2a]' (make test)")

from a2a.client import Client, ClientConfig, create_client  # noqa: E402
from a2a.helpers.proto_helpers import get_data_parts, new_data_part  # noqa: E402
from a2a.server.tasks.task_manager import append_artifact_to_task  # noqa: E402
from a2a.types import (  # noqa: E402
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)

S = TaskState


def refund_agent() -> ReactAgent:
    """Asks to refund 5 (a call a human approves), then says it did; for each task."""
    model = ScriptedChatModel([asks("refund", {"amount": 5}), "Refunded 5."] * 10)
    return ReactAgent(
        name="refunds",
        model=model,
        tools=[refund],
        hooks=[HumanInTheLoopHook(["refund"])],
        saver=MemorySaver(),
    )


def greeter() -> Any:
    """A graph without messages: it asks for a name (an interrupt), then greets it."""

    def ask(state: dict[str, Any]) -> dict[str, Any]:
        name = interrupt({"question": f"what is your name, {state['title']}?"})
        return {"greeting": f"hello, {state['title']} {name}"}

    graph = StateGraph()
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph.compile(saver=MemorySaver())


@pytest.fixture(scope="module")
def gate() -> Gate:
    return Gate()


@pytest.fixture(scope="module")
def url(gate: Gate) -> Iterator[str]:
    app = create_app(
        {
            "weather": weather_agent(),
            "refunds": refund_agent(),
            "held": gate.agent("held"),
            "greeter": greeter(),
        }
    )
    gate.watch(app)
    with live_server(app) as base:
        yield base


@asynccontextmanager
async def a2a(url: str, agent: str, *, streaming: bool = False) -> AsyncIterator[Client]:
    """``a2a-sdk``'s client of the served ``agent``, from its card."""
    async with httpx.AsyncClient(timeout=20) as http:
        config = ClientConfig(httpx_client=http, streaming=streaming)
        client = await create_client(f"{url}/a2a/{agent}", config)
        try:
            yield client
        finally:
            await client.close()


def says(text: str = "", *, data: Any = None, task_id: str = "", context_id: str = "") -> Message:
    part = Part(text=text) if data is None else new_data_part(data)
    return Message(
        message_id=f"m-{text or 'data'}",
        role=Role.ROLE_USER,
        parts=[part],
        task_id=task_id,
        context_id=context_id,
    )


async def send(client: Client, message: Message, *, now: bool = False) -> list[StreamResponse]:
    request = SendMessageRequest(
        message=message, configuration=SendMessageConfiguration(return_immediately=now)
    )
    return [response async for response in client.send_message(request)]


def text_of(task: Task) -> str:
    return "".join(p.text for a in task.artifacts for p in a.parts)


def test_the_card_names_the_agent_its_skills_and_its_interface(url: str) -> None:
    card = httpx.get(f"{url}/a2a/weather/.well-known/agent-card.json").json()
    assert card["name"] == "weather"
    assert card["capabilities"]["streaming"] is True
    assert not card["capabilities"].get("pushNotifications")
    assert [s["name"] for s in card["skills"]] == ["weather", "get_weather"]
    assert card["skills"][1]["description"] == "Current weather for a city."
    assert card["supportedInterfaces"] == [
        {"url": f"{url}/a2a/weather", "protocolBinding": "JSONRPC", "protocolVersion": v}
        for v in ("1.0", "0.3")
    ]
    assert card["url"] == f"{url}/a2a/weather"  # where a client of A2A 0.3 reads it
    assert "securitySchemes" not in card  # no token asked for
    # by its assistant id too, as LangGraph's clients name it
    assistant_id = httpx.post(f"{url}/assistants/search", json={}).json()
    ids = {a["graph_id"]: a["assistant_id"] for a in assistant_id}
    by_id = httpx.get(f"{url}/a2a/{ids['weather']}/.well-known/agent-card.json").json()
    assert by_id["name"] == "weather"
    # where LangGraph's server has it too
    by_query = httpx.get(f"{url}/.well-known/agent-card.json?assistant_id=weather").json()
    assert by_query == card
    which = httpx.get(f"{url}/.well-known/agent-card.json")
    assert which.status_code == 404 and "?assistant_id=" in which.json()["detail"]
    missing = httpx.get(f"{url}/a2a/nobody/.well-known/agent-card.json")
    assert missing.status_code == 404
    assert "nobody" in missing.json()["detail"]


def test_a_sent_message_is_a_run_on_a_thread(url: str) -> None:
    async def scenario() -> Task:
        async with a2a(url, "weather") as client:
            [answer] = await send(client, says("weather in Paris?"))
            return answer.task

    task = asyncio.run(scenario())
    assert task.status.state == S.TASK_STATE_COMPLETED
    assert text_of(task) == "It is sunny in Paris."
    assert [(m.role, m.parts[0].text) for m in task.history] == [
        (Role.ROLE_USER, "weather in Paris?"),
        (Role.ROLE_AGENT, "It is sunny in Paris."),
    ]
    # the same run, on the same thread, over the Agent Protocol
    client = get_sync_client(url=url)
    try:
        run = client.runs.get(task.context_id, task.id)
        assert run["status"] == "success"
        state = client.threads.get_state(task.context_id)
        assert state["values"]["messages"][-1]["content"] == "It is sunny in Paris."
    finally:
        client.close()


def test_a_streamed_message_shows_the_tool_call_its_result_then_the_answer(url: str) -> None:
    async def scenario() -> list[StreamResponse]:
        async with a2a(url, "weather", streaming=True) as client:
            return await send(client, says("and now?"))

    events = asyncio.run(scenario())
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task"
    assert kinds[-1] == "status_update"
    assert events[-1].status_update.status.state == S.TASK_STATE_COMPLETED
    assert not events[-1].status_update.status.HasField("message")
    work = [
        get_data_parts(e.status_update.status.message.parts)
        for e in events[1:-1]
        if e.HasField("status_update")
    ]
    assert [e.status_update.status.state for e in events[1:-1] if e.HasField("status_update")] == [
        S.TASK_STATE_WORKING,
        S.TASK_STATE_WORKING,
    ]
    [[call], [result]] = work
    assert call["tool_call"]["name"] == "get_weather"
    assert call["tool_call"]["arguments"] == {"city": "Paris"}
    assert result["tool_result"] == {
        "id": call["tool_call"]["id"],
        "name": "get_weather",
        "result": "sunny in Paris",
    }
    # the answer comes after the result, each chunk holding its new text only
    first_chunk = kinds.index("artifact_update")
    assert first_chunk > kinds.index("status_update")
    chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert [c.append for c in chunks] == [False] + [True] * (len(chunks) - 1)
    assert [c.last_chunk for c in chunks] == [False] * (len(chunks) - 1) + [True]
    assert [len(c.artifact.parts) for c in chunks] == [1] * len(chunks)
    ids = {getattr(e, e.WhichOneof("payload")).task_id for e in events[1:]}
    assert ids == {events[0].task.id}


def test_the_answer_streams_in_chunks_that_build_the_task_get_task_returns(url: str) -> None:
    async def scenario() -> tuple[list[StreamResponse], Task]:
        async with a2a(url, "weather", streaming=True) as client:
            events = await send(client, says("and now?"))
            done = await client.get_task(GetTaskRequest(id=events[0].task.id))
            return events, done

    events, done = asyncio.run(scenario())
    chunks = [e for e in events if e.HasField("artifact_update")]
    assert len(chunks) > 2
    assert all(c.artifact_update.artifact.parts[0].text for c in chunks)
    built = Task()
    built.CopyFrom(events[0].task)
    for chunk in chunks:  # the SDK's own folding of artifact updates
        append_artifact_to_task(built, chunk.artifact_update)
    assert text_of(built) == text_of(done) == "It is sunny in Paris."
    [artifact] = built.artifacts
    assert artifact.artifact_id == done.artifacts[0].artifact_id
    assert artifact.name == done.artifacts[0].name == "result"
    assert done.status.state == S.TASK_STATE_COMPLETED


def test_a_task_is_read_and_listed_and_a_context_goes_on(url: str) -> None:
    async def scenario() -> tuple[Task, Task, Task, list[Task], list[Task]]:
        async with a2a(url, "weather") as client:
            [first] = await send(client, says("one"))
            context = first.task.context_id
            [second] = await send(client, says("two", context_id=context))
            got = await client.get_task(GetTaskRequest(id=first.task.id, history_length=1))
            listed = await client.list_tasks(ListTasksRequest(context_id=context))
            everything = await client.list_tasks(ListTasksRequest(page_size=100))
            return first.task, second.task, got, list(listed.tasks), list(everything.tasks)

    first, second, got, listed, everything = asyncio.run(scenario())
    assert second.context_id == first.context_id and second.id != first.id
    assert [m.parts[0].text for m in second.history] == ["two", "It is sunny in Paris."]
    assert got.id == first.id and got.status.state == S.TASK_STATE_COMPLETED
    assert [m.parts[0].text for m in got.history] == ["It is sunny in Paris."]
    assert [t.id for t in listed] == [second.id, first.id]  # the latest first
    assert {first.id, second.id} <= {t.id for t in everything}


def test_an_interrupt_is_input_required_and_the_next_message_answers_it(url: str) -> None:
    async def scenario() -> tuple[Task, Task, Task]:
        async with a2a(url, "refunds") as client:
            [paused] = await send(client, says("refund me"))
            answer = {"tool_call_id": "call_1", "decision": "approved"}
            message = says(data=answer, task_id=paused.task.id)
            [done] = await send(client, message)
            read = await client.get_task(GetTaskRequest(id=paused.task.id))
            return paused.task, done.task, read

    paused, done, read = asyncio.run(scenario())
    assert paused.status.state == S.TASK_STATE_INPUT_REQUIRED
    [question] = get_data_parts(paused.status.message.parts)
    assert question["value"]["tool_calls"][0]["name"] == "refund"
    asked = paused.status.message.parts[0].text  # for a client that reads text only
    assert asked.startswith("Tool execution requires approval") and "refund" in asked
    assert done.id == paused.id and done.context_id == paused.context_id
    assert done.status.state == S.TASK_STATE_COMPLETED
    assert text_of(done) == "Refunded 5."
    assert read.status.state == S.TASK_STATE_COMPLETED
    # two runs on the thread: the one that paused, the one that answered
    client = get_sync_client(url=url)
    try:
        runs = client.runs.list(paused.context_id)
        assert [r["status"] for r in runs] == ["success", "success"]
        assert runs[-1]["run_id"] == paused.id
    finally:
        client.close()


def test_a_task_paused_over_a2a_is_answered_over_the_agent_protocol(url: str) -> None:
    async def pause() -> Task:
        async with a2a(url, "refunds") as client:
            [paused] = await send(client, says("refund me"))
            return paused.task

    async def read(task_id: str) -> Task:
        async with a2a(url, "refunds") as client:
            return await client.get_task(GetTaskRequest(id=task_id))

    paused = asyncio.run(pause())
    client = get_sync_client(url=url)
    try:
        client.runs.wait(
            paused.context_id,
            "refunds",
            command={"resume": {"tool_call_id": "call_1", "decision": "approved"}},
        )
    finally:
        client.close()
    task = asyncio.run(read(paused.id))
    assert task.status.state == S.TASK_STATE_COMPLETED
    assert text_of(task) == "Refunded 5."


def test_a_run_started_over_the_agent_protocol_is_read_as_a_task(url: str) -> None:
    client = get_sync_client(url=url)
    try:
        thread = client.threads.create()
        run = client.runs.create(
            thread["thread_id"],
            "weather",
            input={"messages": [{"role": "user", "content": "hi"}]},
        )
        client.runs.join(thread["thread_id"], run["run_id"])
    finally:
        client.close()

    async def scenario() -> Task:
        async with a2a(url, "weather") as client:
            return await client.get_task(GetTaskRequest(id=run["run_id"]))

    task = asyncio.run(scenario())
    assert task.context_id == thread["thread_id"]
    assert task.status.state == S.TASK_STATE_COMPLETED
    assert text_of(task) == "It is sunny in Paris."


def test_a_working_task_is_cancelled_as_its_run(url: str, gate: Gate) -> None:
    gate.close()

    async def scenario() -> tuple[Task, Task]:
        async with a2a(url, "held") as client:
            [started] = await send(client, says("wait"), now=True)
            cancelled = await client.cancel_task(CancelTaskRequest(id=started.task.id))
            return started.task, cancelled

    started, cancelled = asyncio.run(scenario())
    assert started.status.state == S.TASK_STATE_WORKING
    assert cancelled.status.state == S.TASK_STATE_CANCELED
    client = get_sync_client(url=url)
    try:
        assert client.runs.get(started.context_id, started.id)["status"] == "interrupted"
    finally:
        client.close()


def test_a_subscriber_follows_a_working_task_to_its_end(url: str, gate: Gate) -> None:
    gate.close()

    async def scenario() -> list[StreamResponse]:
        async with a2a(url, "held") as client:
            [started] = await send(client, says("later"), now=True)
        async with a2a(url, "held", streaming=True) as client:
            events = []
            async for event in client.subscribe(SubscribeToTaskRequest(id=started.task.id)):
                events.append(event)
                if len(events) == 1:
                    gate.open()  # the run ends once the subscriber is there
            return events

    events = asyncio.run(scenario())
    assert events[0].WhichOneof("payload") == "task"
    assert events[0].task.status.state == S.TASK_STATE_WORKING
    assert events[-1].status_update.status.state == S.TASK_STATE_COMPLETED
    assert events[-2].artifact_update.last_chunk
    said = [
        e.artifact_update.artifact.parts[0].text for e in events if e.HasField("artifact_update")
    ]
    assert "".join(said) == "done: held later"


def test_a_graph_takes_a_data_part_and_streams_its_interrupt(url: str) -> None:
    async def scenario() -> tuple[list[StreamResponse], list[StreamResponse]]:
        async with a2a(url, "greeter", streaming=True) as client:
            asked = await send(client, says(data={"title": "Dr"}))
            task_id = asked[0].task.id
            answered = await send(client, says("Ada", task_id=task_id))
            return asked, answered

    asked, answered = asyncio.run(scenario())
    paused = asked[-1].status_update.status
    assert paused.state == S.TASK_STATE_INPUT_REQUIRED
    [question] = get_data_parts(paused.message.parts)
    assert question["value"] == {"question": "what is your name, Dr?"}
    assert paused.message.parts[0].text == "what is your name, Dr?"
    assert answered[0].task.id == asked[0].task.id
    assert answered[-1].status_update.status.state == S.TASK_STATE_COMPLETED
    [values] = get_data_parts(answered[-2].artifact_update.artifact.parts)
    assert values == {"title": "Dr", "greeting": "hello, Dr Ada"}


def test_a_task_started_over_a2a_is_cancelled_over_the_agent_protocol(url: str, gate: Gate) -> None:
    gate.close()

    async def start() -> Task:
        async with a2a(url, "held") as client:
            [started] = await send(client, says("stop me"), now=True)
            return started.task

    async def read(task_id: str) -> Task:
        async with a2a(url, "held") as client:
            return await client.get_task(GetTaskRequest(id=task_id))

    started = asyncio.run(start())
    client = get_sync_client(url=url)
    try:
        client.runs.cancel(started.context_id, started.id, wait=True)
    finally:
        client.close()
    task = asyncio.run(read(started.id))
    assert started.status.state == S.TASK_STATE_WORKING
    assert task.status.state == S.TASK_STATE_CANCELED
