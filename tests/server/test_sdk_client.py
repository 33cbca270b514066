"""The server driven by the official ``langgraph-sdk`` client (async and sync), over a real
uvicorn on a loopback port: threads, a streamed run with a tool call, ``wait``, an interrupt
approved over HTTP, a rejoin after the last event id, a busy thread, errors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

from checkpoint import MemorySaver
from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall
from graph_agent.server import create_app
from hooks import HumanInTheLoopHook

from .conftest import live_server
from .served_kit import get_weather, refund


def asks(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=[ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))]
    )


def weather_agent() -> ReactAgent:
    model = ScriptedChatModel(
        [asks("get_weather", {"city": "Paris"}), "It is sunny in Paris."] * 10
    )
    return ReactAgent(name="weather", model=model, tools=[get_weather], saver=MemorySaver())


def refund_agent() -> ReactAgent:
    model = ScriptedChatModel([asks("refund", {"amount": 5}), "Refunded 5."])
    return ReactAgent(
        name="refunds",
        model=model,
        tools=[refund],
        hooks=[HumanInTheLoopHook(["refund"])],
        saver=MemorySaver(),
    )


_clients: list[Any] = []


def sync_client(url: str) -> Any:
    """A sync client closed when the test ends (``url`` fixture)."""
    client = get_sync_client(url=url)
    _clients.append(client)
    return client


@pytest.fixture
def url() -> Iterator[str]:
    app = create_app({"weather": weather_agent(), "refunds": refund_agent()})
    with live_server(app) as base:
        try:
            yield base
        finally:
            while _clients:
                _clients.pop().close()


def test_a_streamed_run_shows_the_tool_call_and_the_answer(url: str) -> None:
    async def scenario() -> tuple[list[str], list[Any], dict[str, Any]]:
        async with get_client(url=url) as client:
            return await talk(client)

    async def talk(client: Any) -> tuple[list[str], list[Any], dict[str, Any]]:
        assistants = await client.assistants.search()
        assert sorted(a["graph_id"] for a in assistants) == ["refunds", "weather"]
        thread = await client.threads.create()
        parts = [
            part
            async for part in client.runs.stream(
                thread["thread_id"],
                "weather",
                input={"messages": [{"role": "user", "content": "Weather in Paris?"}]},
                stream_mode=["values", "updates"],
            )
        ]
        state = await client.threads.get_state(thread["thread_id"])
        return [p.event for p in parts], [p.data for p in parts], state

    events, data, state = asyncio.run(scenario())
    assert events[0] == "metadata"
    assert "updates" in events and "values" in events
    last_values = [d for e, d in zip(events, data) if e == "values"][-1]
    kinds = [m["type"] for m in last_values["messages"]]
    assert kinds == ["human", "ai", "tool", "ai"]
    assert last_values["messages"][1]["tool_calls"][0]["name"] == "get_weather"
    assert last_values["messages"][-1]["content"] == "It is sunny in Paris."
    assert state["values"]["messages"][-1]["content"] == "It is sunny in Paris."
    assert state["next"] == []


def test_wait_answers_the_final_values_and_the_thread_continues(url: str) -> None:
    client = sync_client(url)
    thread = client.threads.create()
    first = client.runs.wait(
        thread["thread_id"], "weather", input={"messages": [{"role": "user", "content": "hi"}]}
    )
    assert isinstance(first, dict)
    second = client.runs.wait(
        thread["thread_id"], "weather", input={"messages": [{"role": "user", "content": "again"}]}
    )
    assert isinstance(second, dict)
    assert len(second["messages"]) == len(first["messages"]) + 4
    assert client.threads.get(thread["thread_id"])["status"] == "idle"
    runs = client.runs.list(thread["thread_id"])
    assert [r["status"] for r in runs] == ["success", "success"]


def test_an_interrupt_is_approved_over_http(url: str) -> None:
    client = sync_client(url)
    thread = client.threads.create()
    paused = client.runs.wait(
        thread["thread_id"], "refunds", input={"messages": [{"role": "user", "content": "refund"}]}
    )
    assert isinstance(paused, dict)
    assert paused["__interrupt__"][0]["value"]["tool_calls"][0]["name"] == "refund"
    assert client.threads.get(thread["thread_id"])["status"] == "interrupted"
    done = client.runs.wait(
        thread["thread_id"],
        "refunds",
        command={"resume": {"tool_call_id": "call_1", "decision": "approved"}},
    )
    assert isinstance(done, dict)
    assert done["messages"][-1]["content"] == "Refunded 5."
    assert "__interrupt__" not in done
    assert client.threads.get(thread["thread_id"])["status"] == "idle"


def test_a_rejoin_after_the_last_event_id_gets_every_later_event_once(url: str) -> None:
    import httpx

    client = sync_client(url)
    thread = client.threads.create()
    run = client.runs.create(
        thread["thread_id"],
        "weather",
        input={"messages": [{"role": "user", "content": "hi"}]},
        stream_mode=["values", "updates"],
    )
    client.runs.join(thread["thread_id"], run["run_id"])
    path = f"{url}/threads/{thread['thread_id']}/runs/{run['run_id']}/stream"

    def ids(last: str | None) -> list[str]:
        headers = {"Last-Event-ID": last} if last else {}
        with httpx.stream("GET", path, headers=headers, timeout=10) as response:
            return [
                line.split(": ", 1)[1] for line in response.iter_lines() if line.startswith("id: ")
            ]

    everything = ids(None)
    assert everything == [str(n) for n in range(1, len(everything) + 1)]
    assert ids(everything[2]) == everything[3:]


def test_unknown_things_and_bad_bodies_are_4xx_with_a_json_detail(url: str) -> None:
    import httpx

    client = sync_client(url)
    with pytest.raises(NotFoundError):
        client.threads.get("no-such-thread")
    thread = client.threads.create()
    # (runs.wait raises httpx's error with the status, the other calls the SDK's own)
    with pytest.raises(httpx.HTTPStatusError) as missing:
        client.runs.wait(thread["thread_id"], "no-such-agent", input={})
    assert missing.value.response.status_code == 404
    assert "served: refunds, weather" in missing.value.response.json()["detail"]
    with pytest.raises(httpx.HTTPStatusError) as unreadable:
        client.runs.wait(thread["thread_id"], "weather", input={"messages": [{"role": "x"}]})
    assert unreadable.value.response.status_code == 422
    with pytest.raises(UnprocessableEntityError):
        client.runs.create(thread["thread_id"], "weather", input={"messages": [{"role": "x"}]})
    bad = httpx.post(
        f"{url}/threads/{thread['thread_id']}/runs/wait",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert bad.status_code == 422 and "not JSON" in bad.json()["detail"]
    with pytest.raises(ConflictError):
        client.threads.create(thread_id=thread["thread_id"])


def test_a_bearer_token_is_required_when_configured() -> None:
    import httpx

    app = create_app({"weather": weather_agent()}, token="s3cret")
    with live_server(app) as base:
        assert httpx.get(f"{base}/assistants/weather").status_code == 401
        with get_sync_client(url=base, headers={"Authorization": "Bearer s3cret"}) as good:
            assert good.assistants.get("weather")["graph_id"] == "weather"


def test_new_input_to_a_paused_thread_keeps_the_pending_interrupt(url: str) -> None:
    """A new message on a thread paused for approval is refused with the reason (never
    takes the pause's place silently); the interrupt is still there to answer."""
    client = sync_client(url)
    thread = client.threads.create()
    paused = client.runs.wait(
        thread["thread_id"], "refunds", input={"messages": [{"role": "user", "content": "refund"}]}
    )
    assert isinstance(paused, dict)
    pending = paused["__interrupt__"][0]["id"]
    # (the SDK raises the run's __error__ as an exception naming it)
    with pytest.raises(Exception, match=r"GraphResumeError: .* is paused"):
        client.runs.wait(
            thread["thread_id"], "refunds", input={"messages": [{"role": "user", "content": "hi"}]}
        )
    state = client.threads.get_state(thread["thread_id"])
    assert [i["id"] for i in state["interrupts"]] == [pending]
    assert client.threads.get(thread["thread_id"])["status"] == "interrupted"


def test_two_runs_at_once_on_one_thread_both_run_one_after_the_other(url: str) -> None:
    """adk-python #1733 ('stale session'): the default multitask strategy queues the second
    run behind the first; both succeed, and the thread holds both turns in order."""

    async def scenario() -> tuple[list[Any], dict[str, Any]]:
        async with get_client(url=url) as client:
            thread = await client.threads.create()

            async def turn(text: str) -> Any:
                return await client.runs.wait(
                    thread["thread_id"],
                    "weather",
                    input={"messages": [{"role": "user", "content": text}]},
                )

            answers = await asyncio.gather(turn("first"), turn("second"))
            return answers, await client.threads.get_state(thread["thread_id"])

    answers, state = asyncio.run(scenario())
    assert all("__error__" not in a for a in answers)
    said = [m["content"] for m in state["values"]["messages"] if m["type"] == "human"]
    assert sorted(said) == ["first", "second"] and len(said) == 2
    assert len(state["values"]["messages"]) == 8  # two whole turns, one after the other


def test_update_state_writes_a_new_checkpoint_the_next_read_shows(url: str) -> None:
    client = sync_client(url)
    thread = client.threads.create()
    client.runs.wait(
        thread["thread_id"], "weather", input={"messages": [{"role": "user", "content": "hi"}]}
    )
    before = client.threads.get_state(thread["thread_id"])
    written = client.threads.update_state(
        thread["thread_id"],
        {"messages": [{"role": "user", "content": "a note from support"}]},
        as_node="model",
    )
    after = client.threads.get_state(thread["thread_id"])
    assert written["checkpoint"]["checkpoint_id"] == after["checkpoint"]["checkpoint_id"]
    assert after["checkpoint"]["checkpoint_id"] != before["checkpoint"]["checkpoint_id"]
    assert after["values"]["messages"][-1]["content"] == "a note from support"
    with pytest.raises(UnprocessableEntityError):
        client.threads.update_state(thread["thread_id"], {"messages": [{"role": "x"}]})


def test_a_rejoined_stream_keeps_the_sub_agents_events(url: str) -> None:
    """langgraph #7778: ``join_stream`` of a run gives its subgraph (sub-agent) parts too,
    the same as the stream that started it."""
    from graph_agent import SequentialAgent

    planner = ReactAgent(name="planner", model=ScriptedChatModel(["plan: owls"]))
    writer = ReactAgent(name="writer", model=ScriptedChatModel(["Owls hunt at night."]))
    team = SequentialAgent(name="team", sub_agents=[planner, writer], saver=MemorySaver())
    with live_server(create_app({"team": team})) as base, get_sync_client(url=base) as client:
        thread = client.threads.create()
        live = list(
            client.runs.stream(
                thread["thread_id"],
                "team",
                input={"messages": [{"role": "user", "content": "owls"}]},
                stream_mode=["updates", "run_events"],
                stream_subgraphs=True,
            )
        )
        run_id = live[0].data["run_id"]
        again = list(client.runs.join_stream(thread["thread_id"], run_id))
    nested = [p.event for p in live if "|" in p.event]
    assert any(e.startswith("run_events|planner:") for e in nested)
    assert any(e.startswith("updates|writer:") for e in nested)
    assert [(p.event, p.data) for p in again] == [(p.event, p.data) for p in live]


def test_search_lists_an_agent_s_threads_newest_first_and_filters_them(url: str) -> None:
    client = sync_client(url)
    first, second = client.threads.create(), client.threads.create()
    for thread in (first, second):
        client.runs.wait(
            thread["thread_id"], "weather", input={"messages": [{"role": "user", "content": "hi"}]}
        )
    other = client.threads.create()  # never run: no agent of its own yet
    found = client.threads.search(metadata={"graph_id": "weather"})
    assert [t["thread_id"] for t in found] == [second["thread_id"], first["thread_id"]]
    assert found[0]["metadata"]["graph_id"] == "weather"
    assert client.threads.search(metadata={"graph_id": "refunds"}) == []
    assert [t["thread_id"] for t in client.threads.search(ids=[other["thread_id"]])] == [
        other["thread_id"]
    ]
    assert len(client.threads.search(status="idle", limit=2)) == 2
