"""MessageWindowHook: the model sees the last messages, never a split tool-call pair."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest

from graph_agent import (
    AssistantMessage,
    FunctionChatModel,
    Prompt,
    ReactAgent,
    ScriptedChatModel,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent.messages import Message
from hooks import MessageWindowHook
from hooks.builtin import message_window


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def call(agent: ReactAgent, value: Any, thread: str, mode: str) -> AssistantMessage:
    config = {"thread_id": thread}
    if mode == "sync":
        return agent.call(value, config)
    return asyncio.run(agent.acall(value, config))


def pair(n: int, calls: int = 1) -> list[Message]:
    """An assistant message with ``calls`` tool calls, and their responses."""
    ids = [f"c{n}_{i}" for i in range(calls)]
    return [
        AssistantMessage("", tool_calls=[ToolCall(id=i, name="echo", arguments="{}") for i in ids]),
        ToolResponseMessage(
            responses=tuple(ToolResponse(id=i, name="echo", response_data=i) for i in ids)
        ),
    ]


def texts(messages: list[Message]) -> list[str]:
    return [m.text if not isinstance(m, ToolResponseMessage) else "<tool>" for m in messages]


def check_window(messages: list[Message], kept: list[Message], max_messages: int) -> None:
    assert len(kept) <= max_messages
    assert not isinstance(kept[0], ToolResponseMessage) if kept else True
    users = [m for m in messages if isinstance(m, UserMessage)]
    if users:
        assert users[-1] in kept
    for index, message in enumerate(kept):  # every kept response follows its own calls
        if isinstance(message, ToolResponseMessage):
            before = kept[index - 1]
            assert isinstance(before, AssistantMessage)
            assert [c.id for c in before.tool_calls] == [r.id for r in message.responses]
    assert [m for m in messages if m in kept] == kept  # order kept


def test_window_keeps_the_last_messages() -> None:
    messages: list[Message] = [
        UserMessage(f"u{i}") if i % 2 == 0 else AssistantMessage(f"a{i}") for i in range(6)
    ]
    assert texts(message_window(messages, 3)) == ["a3", "u4", "a5"]
    assert message_window(messages, 10) == messages


def test_window_drops_a_tool_pair_whole() -> None:
    messages = [UserMessage("u0"), *pair(1), *pair(2), AssistantMessage("a"), UserMessage("u1")]
    # the last 4 would start on pair 1's tool response: the response goes too
    kept = message_window(messages, 4)
    assert kept == [*pair(2), AssistantMessage("a"), UserMessage("u1")]
    kept = message_window(messages, 5)
    assert kept == [*pair(2), AssistantMessage("a"), UserMessage("u1")]


def test_window_always_keeps_the_latest_user_message() -> None:
    messages = [
        UserMessage("old"),
        AssistantMessage("a"),
        UserMessage("question"),
        *pair(1),
        *pair(2),
        *pair(3),
    ]
    kept = message_window(messages, 3)
    assert kept == [UserMessage("question"), *pair(3)]
    kept = message_window(messages, 4)  # [question] + last 3, which starts on a response
    assert kept == [UserMessage("question"), *pair(3)]
    assert message_window(messages, 1) == [UserMessage("question")]


def test_window_invariants_on_random_conversations() -> None:
    rng = random.Random(7)
    for _ in range(300):
        messages: list[Message] = []
        for n in range(rng.randint(1, 12)):
            kind = rng.choice(["user", "answer", "tools"])
            if kind == "user":
                messages.append(UserMessage(f"u{n}"))
            elif kind == "answer":
                messages.append(AssistantMessage(f"a{n}"))
            else:
                messages.extend(pair(n, rng.randint(1, 3)))
        max_messages = rng.randint(1, 8)
        check_window(messages, message_window(messages, max_messages), max_messages)


def test_window_hook_checks_max_messages() -> None:
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_messages must be a positive int"):
            MessageWindowHook(bad)  # type: ignore[arg-type]


def test_the_model_sees_the_window_and_the_thread_goes_on(mode: str) -> None:
    model = ScriptedChatModel(["a1", "a2", "a3", "a4"])
    agent = ReactAgent(
        name="windowed", model=model, system_prompt="Be brief.", hooks=[MessageWindowHook(3)]
    )
    for n in range(1, 5):
        assert call(agent, f"u{n}", "t", mode).text == f"a{n}"
    seen = [texts(list(p.messages)) for p in model.prompts]
    assert seen == [
        ["Be brief.", "u1"],
        ["Be brief.", "u1", "a1", "u2"],
        ["Be brief.", "u2", "a2", "u3"],  # the system prompt is not stored nor counted
        ["Be brief.", "u3", "a3", "u4"],
    ]
    assert isinstance(model.prompts[0].messages[0], SystemMessage)
    state = agent.get_state({"thread_id": "t"})
    assert state is not None
    assert texts(state.values["messages"]) == ["u3", "a3", "u4", "a4"]


def test_a_tool_loop_under_a_window(mode: str) -> None:
    ran: list[int] = []

    @tool
    def step(n: int) -> str:
        """Do step n."""
        ran.append(n)
        return f"step {n} done"

    def reply(prompt: Prompt) -> AssistantMessage | str:
        done = sum(isinstance(m, ToolResponseMessage) for m in prompt.messages)
        last = prompt.messages[-1]
        if len(ran) < 4:
            n = len(ran) + 1
            call_ = ToolCall(id=f"s{n}", name="step", arguments=json.dumps({"n": n}))
            return AssistantMessage("", tool_calls=[call_])
        assert isinstance(last, ToolResponseMessage)
        return f"all done; I can see {done} result(s)"

    model = FunctionChatModel(reply)
    agent = ReactAgent(name="loop", model=model, tools=[step], hooks=[MessageWindowHook(4)])
    assert call(agent, "do four steps", "t", mode).text == "all done; I can see 1 result(s)"
    assert ran == [1, 2, 3, 4]
    for prompt in model.prompts:
        sent = list(prompt.messages)
        check_window(sent, sent, 4)
        assert isinstance(sent[0], UserMessage) and sent[0].text == "do four steps"
