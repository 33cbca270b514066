"""An agent's events carry copies: a listener or a stream's reader that changes the messages
or values an event holds cannot change the conversation (what is stored, what the model is
sent next, what the call returns)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import ReactAgent, UserMessage, tool
from graph_agent.events import ModelStart, NodeEnd, RunEnd, RunEvent, RunStart
from graph_agent.models import ScriptedChatModel

from .conftest import tool_calls


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def meddle(event: RunEvent) -> None:
    """Changes every message list an event holds, in place."""
    injected = UserMessage("injected by a listener")
    if isinstance(event, RunStart) and isinstance(event.input, dict):
        event.input["messages"].append(injected)
    elif isinstance(event, ModelStart):
        assert isinstance(event.messages, tuple)  # a tuple of frozen messages: nothing to change
    elif isinstance(event, NodeEnd) and isinstance(event.update, dict):
        messages = event.update.get("messages")
        if isinstance(messages, list):
            messages.append(injected)
    elif isinstance(event, RunEnd):
        event.values["messages"].append(injected)
        event.values["messages"].reverse()


class Meddler:
    def on_event(self, event: RunEvent) -> None:
        meddle(event)


def _agent(listeners: tuple[Any, ...] = ()) -> tuple[ReactAgent, ScriptedChatModel]:
    model = ScriptedChatModel(
        [tool_calls(("weather", {"city": "Oslo"})), "It is sunny in Oslo.", "You are welcome."]
    )
    agent = ReactAgent(
        name="w", model=model, tools=[weather], saver=MemorySaver(), listeners=listeners
    )
    return agent, model


def _turns(mode: str, agent: ReactAgent, config: Any) -> list[str]:
    """Two turns on one thread, their events changed in place; the answers' texts."""
    answers: list[str] = []
    for text in ("Weather in Oslo?", "Thanks."):
        if mode == "listener":
            answers.append(agent.call(text, config).text)
        elif mode == "alistener":
            answers.append(asyncio.run(agent.acall(text, config)).text)
        elif mode == "stream_events":
            for event in agent.stream_events(text, config):
                meddle(event)
        else:

            async def read(text: str = text) -> None:
                async for event in agent.astream_events(text, config):
                    meddle(event)

            asyncio.run(read())
    return answers


def _texts(messages: Any) -> list[str]:
    return [f"{type(m).__name__}: {m.text}" for m in messages]


@pytest.mark.parametrize("mode", ["listener", "alistener", "stream_events", "astream_events"])
def test_changing_an_agents_events_cannot_change_the_conversation(mode: str) -> None:
    config = {"thread_id": "t"}
    plain, plain_model = _agent()
    expected = [plain.call(text, config).text for text in ("Weather in Oslo?", "Thanks.")]
    conversation = _texts(plain.get_state(config).values["messages"])

    listeners = (Meddler(),) if mode in ("listener", "alistener") else ()
    agent, model = _agent(listeners)
    answers = _turns(mode, agent, config)
    if answers:
        assert answers == expected
    assert _texts(agent.get_state(config).values["messages"]) == conversation  # stored
    # what the model was sent on each call: the same prompts as without the listener
    assert [_texts(p.messages) for p in model.prompts] == [
        _texts(p.messages) for p in plain_model.prompts
    ]
    assert not any("injected" in text for text in conversation)
