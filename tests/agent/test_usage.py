"""Token usage is kept on each model answer and totalled per run."""

from __future__ import annotations

import asyncio
import json

import pytest

from checkpoint import SqliteSaver
from graph_agent import (
    AssistantMessage,
    ChatResponse,
    ReactAgent,
    ScriptedChatModel,
    ToolCall,
    Usage,
    tool,
)


@tool
def lookup(query: str) -> str:
    """Looks it up."""
    return "found"


def script() -> ScriptedChatModel:
    asks = AssistantMessage(
        "", tool_calls=(ToolCall(id="c1", name="lookup", arguments=json.dumps({"query": "x"})),)
    )
    return ScriptedChatModel([
        ChatResponse.of(asks, "tool_calls", Usage(100, 10, 110)),
        ChatResponse.of(AssistantMessage("It is x."), "stop", Usage(130, 5, 135)),
        ChatResponse.of(AssistantMessage("Again."), "stop", Usage(150, 2, 152)),
    ])  # fmt: skip


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_each_answer_keeps_its_usage_and_the_run_totals_it(
    asynchronous: bool, tmp_path: object
) -> None:
    with SqliteSaver(f"{tmp_path}/u.db") as saver:
        counted_run(ReactAgent(name="a", model=script(), tools=[lookup], saver=saver), asynchronous)


def counted_run(agent: ReactAgent, asynchronous: bool) -> None:
    config = {"thread_id": "t"}
    if asynchronous:
        asyncio.run(agent.acall("what is x?", config))
    else:
        agent.call("what is x?", config)
    snapshot = agent.get_state(config)
    answers = [m for m in snapshot.values["messages"] if isinstance(m, AssistantMessage)]
    assert [m.metadata["usage"]["total_tokens"] for m in answers] == [110, 135]
    assert snapshot.metadata["usage"] == {
        "prompt_tokens": 230, "completion_tokens": 15, "total_tokens": 245,
    }  # fmt: skip
    agent.call("again?", config)  # a new run counts on its own
    assert agent.get_state(config).metadata["usage"]["total_tokens"] == 152


def test_a_model_that_reports_no_usage_adds_nothing() -> None:
    agent = ReactAgent(name="a", model=ScriptedChatModel(["hi"]))
    config = {"thread_id": "t"}
    answer = agent.call("hello", config)
    assert "usage" not in answer.metadata
    assert agent.get_state(config).metadata["usage"]["total_tokens"] == 0
