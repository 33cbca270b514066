"""No silent sharing: an agent call without a thread id runs on a fresh thread of its own."""

from __future__ import annotations

import asyncio

import pytest

from graph_agent import GraphUsageError, ReactAgent, ScriptedChatModel, UserMessage


def user_texts(model: ScriptedChatModel, call: int) -> list[str]:
    return [m.text for m in model.prompts[call].messages if isinstance(m, UserMessage)]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_calls_without_a_thread_id_do_not_share_history(asynchronous: bool) -> None:
    model = ScriptedChatModel(["Hello Ann.", "I don't know your name."])
    agent = ReactAgent(name="helper", model=model)
    for text in ("My name is Ann.", "What is my name?"):
        if asynchronous:
            asyncio.run(agent.acall(text))
        else:
            agent.call(text)
    assert user_texts(model, 1) == ["What is my name?"]


def test_a_thread_id_keeps_the_conversation() -> None:
    model = ScriptedChatModel(["Hello Ann.", "Ann."])
    agent = ReactAgent(name="helper", model=model)
    agent.call("My name is Ann.", {"thread_id": "ann"})
    agent.call("What is my name?", {"thread_id": "ann"})
    assert user_texts(model, 1) == ["My name is Ann.", "What is my name?"]


@pytest.mark.parametrize("method", ["invoke", "stream", "stream_events", "stream_messages"])
def test_each_entry_point_runs_on_its_own_thread(method: str) -> None:
    model = ScriptedChatModel(["one", "two"])
    agent = ReactAgent(name="helper", model=model)
    for text in ("first", "second"):
        result = getattr(agent, method)(text)
        if method != "invoke":
            list(result)
    assert user_texts(model, 1) == ["second"]


@pytest.mark.parametrize("resume", [None, "command"])
def test_resuming_without_a_thread_id_says_which_is_needed(resume: str | None) -> None:
    from graph_agent import Command

    agent = ReactAgent(name="helper", model=ScriptedChatModel(["x"]))
    with pytest.raises(GraphUsageError, match=r"resuming .* needs the paused run's thread"):
        agent.invoke(Command(resume="yes") if resume else None)
