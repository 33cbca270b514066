"""Several interrupts pending at once over ``/mcp`` (an agent whose two tools each call
``interrupt()`` in one step): each asked in turn of a client of the handshake, each an input
request of a 2026-07-28 client's ``input_required`` result, each listed in a task's
``input_required``; the thread resumed with every answer keyed by interrupt id, as the Agent
Protocol's resume does."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall, interrupt, tool
from graph_agent.server import create_app

from .conftest import live_server
from .test_mcp_served import TOKEN, session

from .mcp_tasks_kit import Tasks, modern, until, update  # isort: skip

ANSWERS = {"Colour?": "blue", "Size?": "big"}


@tool
def ask_colour() -> str:
    """Ask the customer the colour."""
    return f"colour {interrupt('Colour?')}"


@tool
def ask_size() -> str:
    """Ask the customer the size."""
    return f"size {interrupt('Size?')}"


def shirts_agent() -> ReactAgent:
    both = (
        ToolCall(id="c1", name="ask_colour", arguments="{}"),
        ToolCall(id="c2", name="ask_size", arguments="{}"),
    )
    model = ScriptedChatModel([AssistantMessage("", tool_calls=both), "A big blue one."])
    return ReactAgent(name="shirts", model=model, tools=[ask_colour, ask_size], saver=MemorySaver())


@pytest.fixture
def url() -> Iterator[str]:
    with live_server(create_app({"shirts": shirts_agent()}, token=TOKEN)) as base:
        yield base


class Answerer:
    """An elicitation callback that answers each question as ``ANSWERS`` says."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: Any) -> Any:
        from mcp_types import ElicitResult

        self.asked.append(params.message)
        said = next(a for q, a in ANSWERS.items() if q in params.message)
        return ElicitResult(action="accept", content={"answer": said})


def reply(request: dict[str, Any]) -> dict[str, Any]:
    """The ``inputResponses`` entry that answers a task's elicitation ``request``."""
    message = request["params"]["message"]
    said = next(a for q, a in ANSWERS.items() if q in message)
    return {"action": "accept", "content": {"answer": said}}


async def resumes(url: str, thread: str) -> tuple[list[Any], list[str]]:
    """The thread's resume commands (oldest first) and its tool results, over the Agent
    Protocol."""
    from langgraph_sdk import get_client

    async with get_client(url=url, api_key=TOKEN) as protocol:
        runs = list(await protocol.runs.list(thread))[::-1]
        state = await protocol.threads.get_state(thread)
    said = [m["content"] for m in state["values"]["messages"] if m["type"] == "tool"]
    return [r["kwargs"].get("command") for r in runs], said


def test_a_client_of_the_handshake_is_asked_each_in_turn(url: str) -> None:
    answerer = Answerer()

    async def scenario() -> tuple[Any, tuple[list[Any], list[str]]]:
        async with session(url, elicitation_callback=answerer) as client:
            result = await client.call_tool("shirts", {"message": "A shirt, please"})
        return result, await resumes(url, result.meta["thread_id"])

    result, (commands, said) = asyncio.run(scenario())
    assert not result.is_error, result
    assert result.content[0].text == "A big blue one."
    assert [m.split(": ", 1)[1] for m in answerer.asked] == ['"Colour?"', '"Size?"']
    assert said == ["colour blue", "size big"]
    # one resume, both answers keyed by interrupt id
    assert commands[0] is None and sorted(commands[1]["resume"].values()) == ["big", "blue"]


def test_a_client_of_2026_gets_each_as_an_input_request(url: str) -> None:
    answerer = Answerer()

    async def scenario() -> tuple[Any, Any, tuple[list[Any], list[str]]]:
        async with modern(url, TOKEN, elicitation_callback=answerer) as client:
            arguments = {"message": "A shirt, please"}
            first = await client.session.call_tool("shirts", arguments, allow_input_required=True)
            answers = {
                key: await answerer(None, request.params)
                for key, request in first.input_requests.items()
            }
            result = await client.call_tool(
                "shirts", arguments, input_responses=answers, request_state=first.request_state
            )
        return first, result, await resumes(url, result.meta["thread_id"])

    first, result, (commands, said) = asyncio.run(scenario())
    assert first.result_type == "input_required"
    asked = sorted(r.params.message.split(": ", 1)[1] for r in first.input_requests.values())
    assert asked == ['"Colour?"', '"Size?"']
    assert result.content[0].text == "A big blue one."
    assert said == ["colour blue", "size big"]
    assert sorted(commands[1]["resume"].values()) == ["big", "blue"]


def test_a_task_lists_each_and_takes_their_answers_one_by_one(url: str) -> None:
    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with modern(url, TOKEN, extensions=[Tasks()]) as client:
            handle = await client.session.call_tool(
                "shirts", {"message": "A shirt, please"}, allow_claimed=True
            )
            both = await until(client.session, handle.task_id, "input_required")
            first, second = sorted(both["inputRequests"].items())
            await update(client.session, handle.task_id, {first[0]: reply(first[1])})
            # the answer's run is recorded before tasks/update is acknowledged
            rest = await until(client.session, handle.task_id, "input_required")
            await update(client.session, handle.task_id, {second[0]: reply(second[1])})
            return both, rest, await until(client.session, handle.task_id)

    both, rest, done = asyncio.run(scenario())
    assert len(both["inputRequests"]) == 2
    # the one not answered yet is still asked, under the same key
    assert list(rest["inputRequests"]) == sorted(both["inputRequests"])[1:]
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "A big blue one."
