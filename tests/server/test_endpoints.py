"""The rest of the Agent Protocol's endpoints, through the official ``langgraph-sdk`` client
against a real uvicorn: stateless runs, thread metadata and deletion, run lists and
deletion, state at a checkpoint, history filters, keep-alives, ``on_disconnect``, and the
run options this server refuses rather than ignores."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")
from langgraph_sdk import get_client, get_sync_client  # noqa: E402
from langgraph_sdk.errors import (  # noqa: E402
    BadRequestError,
    ConflictError,
    NotFoundError,
    UnprocessableEntityError,
)

from checkpoint import MemorySaver  # noqa: E402
from graph_agent import (  # noqa: E402
    AssistantMessage,
    ReactAgent,
    ScriptedChatModel,
    SequentialAgent,
    ToolCall,
    tool,
)
from graph_agent.server import create_app  # noqa: E402

from .conftest import live_server  # noqa: E402
from .served_kit import get_weather  # noqa: E402

HI = {"messages": [{"role": "user", "content": "hi"}]}


def asks(name: str, arguments: dict[str, Any]) -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=[ToolCall(id="call_1", name=name, arguments=json.dumps(arguments))]
    )


@tool
async def slow(seconds: float) -> str:
    """Wait a while."""
    await asyncio.sleep(seconds)
    return "waited"


class Kit:
    """The served objects (their savers, to look into) and a sync client."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.client = get_sync_client(url=base)


@pytest.fixture
def kit() -> Iterator[Kit]:
    weather_saver, team_saver, slow_saver = MemorySaver(), MemorySaver(), MemorySaver()
    weather = ReactAgent(
        name="weather",
        model=ScriptedChatModel([asks("get_weather", {"city": "Rome"}), "Sunny."] * 20),
        tools=[get_weather],
        saver=weather_saver,
    )
    team = SequentialAgent(
        name="team",
        sub_agents=[
            ReactAgent(name="planner", model=ScriptedChatModel(["plan"] * 5)),
            ReactAgent(name="writer", model=ScriptedChatModel(["text"] * 5)),
        ],
        saver=team_saver,
    )
    sleeper = ReactAgent(
        name="sleeper",
        model=ScriptedChatModel([asks("slow", {"seconds": 0.6}), "Done waiting."] * 5),
        tools=[slow],
        saver=slow_saver,
    )
    app = create_app({"weather": weather, "team": team, "sleeper": sleeper}, heartbeat=0.1)
    with live_server(app) as base:
        made = Kit(base)
        made.savers = {"weather": weather_saver, "team": team_saver}  # type: ignore[attr-defined]
        try:
            yield made
        finally:
            made.client.close()


def saver_threads(saver: MemorySaver) -> list[str]:
    return sorted(saver._threads)


# -- stateless runs ------------------------------------------------------------------------


def test_a_stateless_wait_answers_and_leaves_no_thread_behind(kit: Kit) -> None:
    answer = kit.client.runs.wait(None, "weather", input=HI)
    assert isinstance(answer, dict)
    assert answer["messages"][-1]["content"] == "Sunny."
    deadline = time.monotonic() + 5
    while saver_threads(kit.savers["weather"]) and time.monotonic() < deadline:  # type: ignore[attr-defined]
        time.sleep(0.02)
    assert saver_threads(kit.savers["weather"]) == []  # type: ignore[attr-defined]
    assert kit.client.threads.search() == []
    with pytest.raises(UnprocessableEntityError):  # refused: no thread made for it either
        kit.client.runs.create(None, "weather", input=HI, stream_mode="nonsense")
    assert kit.client.threads.search() == []


def test_a_stateless_stream_kept_on_completion_leaves_its_thread(kit: Kit) -> None:
    parts = list(
        kit.client.runs.stream(
            None, "weather", input=HI, stream_mode="values", on_completion="keep"
        )
    )
    assert parts[0].event == "metadata"
    assert parts[-1].data["messages"][-1]["content"] == "Sunny."
    (thread,) = kit.client.threads.search()
    assert thread["values"]["messages"][-1]["content"] == "Sunny."


def test_a_stateless_stream_says_where_its_run_is(kit: Kit) -> None:
    with (
        httpx.Client(base_url=kit.base) as raw,
        raw.stream(
            "POST", "/runs/stream", json={"assistant_id": "weather", "input": HI}
        ) as response,
    ):
        run_id = next(
            json.loads(line[len("data: ") :])["run_id"]
            for line in response.iter_lines()
            if line.startswith("data: ")
        )
        assert response.headers["content-location"] == f"/runs/{run_id}"
        assert response.headers["location"] == f"/runs/{run_id}/stream"


def test_resuming_without_a_thread_is_a_400(kit: Kit) -> None:
    with pytest.raises(BadRequestError, match="thread_id"):
        kit.client.runs.create(None, "weather", command={"resume": "yes"})
    # runs.wait reads the status itself: a plain httpx error, the same 400
    with pytest.raises(httpx.HTTPStatusError) as raised:
        kit.client.runs.wait(None, "weather", command={"resume": "yes"})
    assert raised.value.response.status_code == 400


# -- threads ---------------------------------------------------------------------------------


def test_a_thread_s_metadata_is_merged_by_update(kit: Kit) -> None:
    thread = kit.client.threads.create(metadata={"user": "ada"})
    updated = kit.client.threads.update(thread["thread_id"], metadata={"topic": "owls"})
    assert updated["metadata"] == {"user": "ada", "topic": "owls"}
    assert kit.client.threads.get(thread["thread_id"])["metadata"]["topic"] == "owls"


def test_a_deleted_thread_is_gone_with_its_sub_agents_checkpoints(kit: Kit) -> None:
    thread = kit.client.threads.create()
    kit.client.runs.wait(thread["thread_id"], "team", input=HI)
    saver = kit.savers["team"]  # type: ignore[attr-defined]
    assert len(saver_threads(saver)) == 3  # the flow's and its two sub-agents'
    kit.client.threads.delete(thread["thread_id"])
    assert saver_threads(saver) == []
    with pytest.raises(NotFoundError):
        kit.client.threads.get(thread["thread_id"])
    with pytest.raises(NotFoundError):
        kit.client.runs.list(thread["thread_id"])


def test_a_thread_created_twice_is_a_conflict_unless_asked_to_do_nothing(kit: Kit) -> None:
    thread = kit.client.threads.create(thread_id="t-1")
    with pytest.raises(ConflictError):
        kit.client.threads.create(thread_id="t-1")
    again = kit.client.threads.create(thread_id="t-1", if_exists="do_nothing")
    assert again["thread_id"] == thread["thread_id"]


def test_a_run_may_create_its_thread(kit: Kit) -> None:
    with pytest.raises(NotFoundError):
        kit.client.runs.create("new-thread", "weather", input=HI)
    answer = kit.client.runs.wait("new-thread", "weather", input=HI, if_not_exists="create")
    assert isinstance(answer, dict)
    assert kit.client.threads.get("new-thread")["metadata"]["graph_id"] == "weather"


def test_state_at_a_checkpoint_and_history_before_it(kit: Kit) -> None:
    thread = kit.client.threads.create()
    kit.client.runs.wait(thread["thread_id"], "weather", input=HI)
    history = kit.client.threads.get_history(thread["thread_id"], limit=20)
    assert len(history) >= 4
    middle = history[2]
    at = kit.client.threads.get_state(
        thread["thread_id"], checkpoint_id=middle["checkpoint"]["checkpoint_id"]
    )
    assert at["values"] == middle["values"]
    by_dict = kit.client.threads.get_state(thread["thread_id"], checkpoint=middle["checkpoint"])
    assert by_dict["checkpoint"] == middle["checkpoint"]
    older = kit.client.threads.get_history(
        thread["thread_id"], before=middle["checkpoint"]["checkpoint_id"], limit=20
    )
    assert [s["checkpoint"] for s in older] == [s["checkpoint"] for s in history[3:]]
    inputs = kit.client.threads.get_history(
        thread["thread_id"], metadata={"source": "input"}, limit=20
    )
    assert [s["metadata"]["source"] for s in inputs] == ["input"]
    with pytest.raises(NotFoundError):
        kit.client.threads.get_state(thread["thread_id"], checkpoint_id="0" * 24)


# -- runs ------------------------------------------------------------------------------------


def test_runs_are_listed_by_page_and_status_and_a_finished_one_deleted(kit: Kit) -> None:
    thread = kit.client.threads.create()
    for _ in range(3):
        kit.client.runs.wait(thread["thread_id"], "weather", input=HI)
    runs = kit.client.runs.list(thread["thread_id"], limit=2)
    assert len(runs) == 2
    assert len(kit.client.runs.list(thread["thread_id"], limit=2, offset=2)) == 1
    assert kit.client.runs.list(thread["thread_id"], status="error") == []
    kit.client.runs.delete(thread["thread_id"], runs[0]["run_id"])
    assert len(kit.client.runs.list(thread["thread_id"])) == 2


def test_a_running_run_cannot_be_deleted(kit: Kit) -> None:
    thread = kit.client.threads.create()
    run = kit.client.runs.create(thread["thread_id"], "sleeper", input=HI)
    with pytest.raises(ConflictError):
        kit.client.runs.delete(thread["thread_id"], run["run_id"])
    kit.client.runs.join(thread["thread_id"], run["run_id"])


@pytest.mark.parametrize(
    "option",
    [
        {"interrupt_before": ["tools"]},
        {"interrupt_after": "*"},
        {"webhook": "http://127.0.0.1:9/hook"},
        {"after_seconds": 5},
        {"multitask_strategy": "later"},
    ],
)
def test_run_options_this_server_does_not_do_are_refused(kit: Kit, option: dict[str, Any]) -> None:
    thread = kit.client.threads.create()
    with pytest.raises(UnprocessableEntityError):
        kit.client.runs.create(thread["thread_id"], "weather", input=HI, **option)
    assert kit.client.runs.list(thread["thread_id"]) == []


def test_a_quiet_stream_and_a_long_wait_send_keep_alives(kit: Kit) -> None:
    thread = kit.client.threads.create()
    with httpx.Client(base_url=kit.base, timeout=10) as raw:
        with raw.stream(
            "POST",
            f"/threads/{thread['thread_id']}/runs/stream",
            json={"assistant_id": "sleeper", "input": HI},
        ) as response:
            lines = list(response.iter_lines())
        assert ": heartbeat" in lines
        assert response.headers["content-location"].startswith(
            f"/threads/{thread['thread_id']}/runs/"
        )
        waited = raw.post(
            f"/threads/{thread['thread_id']}/runs/wait",
            json={"assistant_id": "sleeper", "input": HI},
        )
    assert waited.status_code == 200
    assert waited.text.startswith("\n")
    assert waited.json()["messages"][-1]["content"] == "Done waiting."
    assert waited.headers["location"].endswith("/join")


def test_a_client_that_leaves_a_stream_with_on_disconnect_cancel_cancels_the_run(
    kit: Kit,
) -> None:
    async def leave_early() -> str:
        async with get_client(url=kit.base) as client:
            thread = await client.threads.create()
            async for part in client.runs.stream(
                thread["thread_id"], "sleeper", input=HI, on_disconnect="cancel"
            ):
                assert part.event == "metadata"
                return str(thread["thread_id"])
        raise AssertionError("the stream sent nothing")

    thread_id = asyncio.run(leave_early())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        (run,) = kit.client.runs.list(thread_id)
        if run["status"] != "running":
            break
        time.sleep(0.05)
    assert run["status"] == "interrupted"
    state = kit.client.threads.get_state(thread_id)
    calls = [m for m in state["values"]["messages"] if m["type"] == "ai" and m["tool_calls"]]
    answered = {m["tool_call_id"] for m in state["values"]["messages"] if m["type"] == "tool"}
    assert {c["tool_calls"][0]["id"] for c in calls} <= answered  # no dangling call


def test_a_cancel_that_waits_answers_the_thread_s_values(kit: Kit) -> None:
    thread = kit.client.threads.create()
    run = kit.client.runs.create(thread["thread_id"], "sleeper", input=HI)
    answer = kit.client.runs.cancel(thread["thread_id"], run["run_id"], wait=True)
    assert isinstance(answer, dict)
    assert answer["messages"][0]["content"] == "hi"
    assert kit.client.runs.get(thread["thread_id"], run["run_id"])["status"] == "interrupted"


def test_info_names_the_version(kit: Kit) -> None:
    from graph_agent import __version__

    assert httpx.get(f"{kit.base}/info").json() == {"version": __version__, "flags": {}}
