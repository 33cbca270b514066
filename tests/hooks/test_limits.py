"""ModelCallLimitHook and ToolCallLimitHook: per-run and per-thread caps, "end" and "error"."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from graph_agent import (
    AssistantMessage,
    GraphAgentError,
    ReactAgent,
    ScriptedChatModel,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent.agent._unanswered import UNANSWERED_TEXT
from graph_agent.messages import Message
from hooks import (
    CallLimitExceededError,
    ModelCallLimitExceededError,
    ModelCallLimitHook,
    ToolCallLimitExceededError,
    ToolCallLimitHook,
)


def asks(*calls: tuple[str, str, dict[str, Any]]) -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=[ToolCall(id=i, name=n, arguments=json.dumps(a)) for i, n, a in calls]
    )


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def call(agent: ReactAgent, value: Any, thread: str, mode: str) -> AssistantMessage:
    config = {"thread_id": thread}
    if mode == "sync":
        return agent.call(value, config)
    return asyncio.run(agent.acall(value, config))


def assert_valid(messages: list[Message]) -> None:
    """Every tool call is answered by the tool message right after it, and nothing else."""
    for index, message in enumerate(messages):
        if isinstance(message, ToolResponseMessage):
            before = messages[index - 1]
            assert isinstance(before, AssistantMessage)
            assert [r.id for r in message.responses] == [c.id for c in before.tool_calls]
        elif isinstance(message, AssistantMessage) and message.tool_calls:
            assert isinstance(messages[index + 1], ToolResponseMessage)


class Tools:
    """Two tools that record their calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

        @tool
        def search(query: str) -> str:
            """Search the web."""
            self.calls.append(("search", query))
            return f"results for {query}"

        @tool
        def lookup(key: str) -> str:
            """Look a key up."""
            self.calls.append(("lookup", key))
            return f"value of {key}"

        self.search = search
        self.lookup = lookup


def agent_with(model: ScriptedChatModel, *hooks: Any, tools: Tools | None = None) -> ReactAgent:
    tools = tools or Tools()
    return ReactAgent(name="limited", model=model, tools=[tools.search, tools.lookup], hooks=hooks)


# -- ModelCallLimitHook ---------------------------------------------------------------------------


def test_model_run_limit_ends_the_run_with_a_message(mode: str) -> None:
    model = ScriptedChatModel(
        [asks(("c1", "search", {"query": "a"})), asks(("c2", "search", {"query": "b"})), "done"]
    )
    agent = agent_with(model, ModelCallLimitHook(run_limit=2))
    reply = call(agent, "go", "t", mode)
    assert reply.text.startswith("Model call limit reached")
    assert "run_limit=2" in reply.text
    assert reply.metadata == {"stopped_by": "ModelCallLimitHook", "limit": "run"}
    assert len(model.prompts) == 2
    state = agent.get_state({"thread_id": "t"})
    assert state is not None
    assert state.values["run_model_call_count"] == 2
    assert state.values["thread_model_call_count"] == 2
    assert_valid(state.values["messages"])


def test_model_run_limit_resets_for_each_run(mode: str) -> None:
    model = ScriptedChatModel(
        [
            asks(("c1", "search", {"query": "a"})),
            "first",
            asks(("c2", "search", {"query": "b"})),
            "second",
        ]
    )
    agent = agent_with(model, ModelCallLimitHook(run_limit=2))
    assert call(agent, "one", "t", mode).text == "first"
    assert call(agent, "two", "t", mode).text == "second"
    state = agent.get_state({"thread_id": "t"})
    assert state is not None
    assert state.values["thread_model_call_count"] == 4
    assert state.values["run_model_call_count"] == 2


def test_model_thread_limit_survives_runs_and_does_not_leak_to_other_threads(mode: str) -> None:
    model = ScriptedChatModel(
        [
            asks(("c1", "search", {"query": "a"})),
            "first",
            asks(("c2", "search", {"query": "b"})),
            "other thread",
            "other thread again",
        ]
    )
    agent = agent_with(model, ModelCallLimitHook(thread_limit=3))
    assert call(agent, "one", "t", mode).text == "first"
    stopped = call(agent, "two", "t", mode)  # the third call is allowed, the fourth is not
    assert stopped.text.startswith("Model call limit reached")
    assert "thread_limit=3" in stopped.text and stopped.metadata["limit"] == "thread"
    again = call(agent, "three", "t", mode)  # still over the thread's cap: no model call
    assert again.text.startswith("Model call limit reached")
    assert len(model.prompts) == 3
    assert call(agent, "hello", "u", mode).text == "other thread"  # another thread starts at 0
    assert call(agent, "hello again", "u", mode).text == "other thread again"


def test_model_limit_error_raises_before_the_model_is_called(mode: str) -> None:
    model = ScriptedChatModel([asks(("c1", "search", {"query": "a"})), "unused"])
    agent = agent_with(model, ModelCallLimitHook(run_limit=1, exit_behavior="error"))
    with pytest.raises(ModelCallLimitExceededError, match="run_limit=1") as caught:
        call(agent, "go", "t", mode)
    error = caught.value
    assert isinstance(error, GraphAgentError) and isinstance(error, CallLimitExceededError)
    assert (error.scope, error.limit, error.count) == ("run", 1, 1)
    assert len(model.prompts) == 1
    state = agent.get_state({"thread_id": "t"})
    assert state is not None
    messages = state.values["messages"]
    assert isinstance(messages[-1], ToolResponseMessage)  # the tool ran; the thread is valid
    assert_valid(messages)


def test_model_limit_zero_never_calls_the_model(mode: str) -> None:
    model = ScriptedChatModel([])
    agent = agent_with(model, ModelCallLimitHook(run_limit=0))
    assert call(agent, "go", "t", mode).text.startswith("Model call limit reached")
    assert model.prompts == []


def test_thread_goes_on_after_an_end(mode: str) -> None:
    model = ScriptedChatModel([asks(("c1", "search", {"query": "a"})), "answer"])
    agent = agent_with(model, ModelCallLimitHook(run_limit=1))
    call(agent, "go", "t", mode)
    assert call(agent, "and now?", "t", mode).text == "answer"
    sent = model.prompts[-1].messages
    assert isinstance(sent[-1], UserMessage) and sent[-1].text == "and now?"
    assert_valid(list(sent))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "needs run_limit, thread_limit or both"),
        ({"run_limit": -1}, "run_limit must be a non-negative int"),
        ({"thread_limit": 1.5}, "thread_limit must be a non-negative int"),
        ({"run_limit": 1, "exit_behavior": "stop"}, "exit_behavior must be 'end' or 'error'"),
    ],
)
def test_limit_hooks_check_their_arguments(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ModelCallLimitHook(**kwargs)
    with pytest.raises(ValueError, match=match):
        ToolCallLimitHook(**kwargs)


# -- ToolCallLimitHook ----------------------------------------------------------------------------


def test_tool_run_limit_end_answers_pending_calls_and_stops(mode: str) -> None:
    tools = Tools()
    model = ScriptedChatModel(
        [
            asks(("c1", "search", {"query": "a"})),
            asks(("c2", "search", {"query": "b"}), ("c3", "lookup", {"key": "k"})),
            "next turn",
        ]
    )
    agent = agent_with(model, ToolCallLimitHook(run_limit=2), tools=tools)
    reply = call(agent, "go", "t", mode)
    assert reply.text.startswith("Tool call limit reached: 1 tool calls made in this run")
    assert reply.metadata == {"stopped_by": "ToolCallLimitHook", "limit": "run"}
    assert tools.calls == [("search", "a")]  # the second batch never ran
    state = agent.get_state({"thread_id": "t"})
    assert state is not None
    messages = state.values["messages"]
    assert_valid(messages)
    refused = messages[-2]
    assert isinstance(refused, ToolResponseMessage)
    assert [r.id for r in refused.responses] == ["c2", "c3"]
    assert all(
        "limit of tool calls per run (2) was reached" in r.response_data for r in refused.responses
    )
    assert state.values["run_tool_call_count"] == {"__all__": 1}
    # the next turn sends a valid conversation to the model
    assert call(agent, "continue", "t", mode).text == "next turn"
    assert_valid(list(model.prompts[-1].messages))


def test_tool_limit_for_one_tool_counts_only_that_tool(mode: str) -> None:
    tools = Tools()
    model = ScriptedChatModel(
        [
            asks(("c1", "search", {"query": "a"}), ("c2", "lookup", {"key": "x"})),
            asks(("c3", "lookup", {"key": "y"})),
            "first",
            asks(("c4", "lookup", {"key": "z"})),
            asks(("c5", "search", {"query": "b"})),
            "unused",
        ]
    )
    hook = ToolCallLimitHook(thread_limit=1, tool_name="search")
    assert hook.hook_name == "ToolCallLimitHook[search]"
    agent = agent_with(model, hook, tools=tools)
    assert call(agent, "one", "t", mode).text == "first"
    stopped = call(agent, "two", "t", mode)
    assert "calls of tool 'search'" in stopped.text and stopped.metadata["limit"] == "thread"
    assert sorted(tools.calls) == [
        ("lookup", "x"),
        ("lookup", "y"),
        ("lookup", "z"),
        ("search", "a"),
    ]
    state = agent.get_state({"thread_id": "t"})
    assert state is not None
    assert state.values["thread_tool_call_count"] == {"search": 1}
    assert_valid(state.values["messages"])


def test_tool_thread_limit_survives_runs_not_threads(mode: str) -> None:
    tools = Tools()
    model = ScriptedChatModel(
        [
            asks(("c1", "search", {"query": "a"})),
            "first",
            asks(("c2", "search", {"query": "b"})),
            asks(("c3", "search", {"query": "c"})),
            "other thread",
        ]
    )
    agent = agent_with(model, ToolCallLimitHook(thread_limit=1), tools=tools)
    assert call(agent, "one", "t", mode).text == "first"
    assert call(agent, "two", "t", mode).text.startswith("Tool call limit reached")
    assert call(agent, "hi", "u", mode).text == "other thread"
    assert tools.calls == [("search", "a"), ("search", "c")]


def test_two_tool_limits_share_the_counts(mode: str) -> None:
    tools = Tools()
    model = ScriptedChatModel(
        [
            asks(("c1", "search", {"query": "a"}), ("c2", "lookup", {"key": "k"})),
            asks(("c3", "lookup", {"key": "l"})),
            "done",
        ]
    )
    agent = agent_with(
        model,
        ToolCallLimitHook(run_limit=5),
        ToolCallLimitHook(run_limit=1, tool_name="search"),
        tools=tools,
    )
    assert call(agent, "go", "t", mode).text == "done"
    state = agent.get_state({"thread_id": "t"})
    assert state is not None
    assert state.values["run_tool_call_count"] == {"__all__": 3, "search": 1}
    assert state.values["thread_tool_call_count"] == {"__all__": 3, "search": 1}


def test_tool_limit_error_raises_and_the_next_run_answers_the_calls(mode: str) -> None:
    tools = Tools()
    model = ScriptedChatModel(
        [asks(("c1", "search", {"query": "a"}), ("c2", "search", {"query": "b"})), "recovered"]
    )
    agent = agent_with(model, ToolCallLimitHook(run_limit=1, exit_behavior="error"), tools=tools)
    with pytest.raises(ToolCallLimitExceededError, match="run_limit=1") as caught:
        call(agent, "go", "t", mode)
    assert (caught.value.scope, caught.value.limit, caught.value.tool_name) == ("run", 1, None)
    assert tools.calls == []
    assert call(agent, "try again", "t", mode).text == "recovered"
    sent = list(model.prompts[-1].messages)
    assert_valid(sent)
    answered = sent[-2]
    assert isinstance(answered, ToolResponseMessage)
    # new input answers the calls the failed run left open (graph_agent/agent/_unanswered.py)
    assert {r.response_data for r in answered.responses} == {UNANSWERED_TEXT}


def test_tool_limit_ignores_answers_without_tool_calls(mode: str) -> None:
    model = ScriptedChatModel(["plain answer"])
    agent = agent_with(model, ToolCallLimitHook(run_limit=0))
    assert call(agent, "go", "t", mode).text == "plain answer"
