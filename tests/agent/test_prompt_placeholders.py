"""Placeholders in ``system_prompt`` and ``instruction``: ``{input}`` and state keys, filled each
time the model node runs; JSON-like braces left alone, ``{{``/``}}`` escaped; a missing key is a
clear error; a prompt without placeholders is one message made once."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from graph_agent import (
    GraphUsageError,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    SystemMessage,
    UserMessage,
    tool,
)

from .conftest import Runner, tool_calls


@tool
def ping() -> str:
    """Ping."""
    return "pong"


def system_texts(model: ScriptedChatModel) -> list[str]:
    texts = []
    for prompt in model.prompts:
        first = prompt.messages[0]
        texts.append(first.text if isinstance(first, SystemMessage) else "")
    return texts


def test_input_is_the_last_user_message_filled_at_every_model_call(run: Runner) -> None:
    model = ScriptedChatModel([tool_calls(("ping", {})), "first", "second"])
    agent = ReactAgent(
        name="a",
        model=model,
        tools=[ping],
        system_prompt="You help with: {input}",
        instruction="Be brief.",
    )
    config = RunnableConfig(thread_id="turns")
    run.call(agent, "book a room", config)
    run.call(agent, "cancel it", config)
    assert system_texts(model) == [
        "You help with: book a room\n\nBe brief.",
        "You help with: book a room\n\nBe brief.",  # after the tool: still this turn's input
        "You help with: cancel it\n\nBe brief.",
    ]
    stored = agent.get_state(config)
    assert stored is not None
    assert not any(isinstance(m, SystemMessage) for m in stored.values["messages"])


def test_input_and_state_keys_come_from_the_state(run: Runner) -> None:
    model = ScriptedChatModel(["ok"])
    agent = ReactAgent(
        name="writer", model=model, instruction="Task: {input}. Plan: {plan}. Steps: {steps}."
    )
    state = {"messages": [UserMessage("go")], "input": "write a poem", "plan": "rhyme", "steps": 3}
    run.invoke(agent, state)
    assert system_texts(model) == ["Task: write a poem. Plan: rhyme. Steps: 3."]


def test_json_braces_stay_and_double_braces_escape(run: Runner) -> None:
    model = ScriptedChatModel(["ok"])
    prompt = 'Reply as {"answer": "..."}; {{input}} is literal; {} and { spaced } too: {input}'
    agent = ReactAgent(name="a", model=model, system_prompt=prompt)
    run.call(agent, "hi")
    assert system_texts(model) == [
        'Reply as {"answer": "..."}; {input} is literal; {} and { spaced } too: hi'
    ]


def test_a_missing_key_names_the_agent_the_placeholder_and_the_state_keys(run: Runner) -> None:
    agent = ReactAgent(name="writer", model=ScriptedChatModel(["ok"]), instruction="Plan: {plan}")
    with pytest.raises(GraphUsageError) as caught:
        run.invoke(agent, {"messages": [UserMessage("go")], "topic": "cats"})
    message = str(caught.value)
    assert "agent 'writer': its prompt names {plan}, but the state has no 'plan' key" in message
    assert "(its keys: messages, topic)" in message
    assert "an earlier agent's output_key or the input must set it" in message


def test_input_without_an_input_key_or_a_user_message_is_an_error(run: Runner) -> None:
    agent = ReactAgent(name="a", model=ScriptedChatModel(["ok"]), system_prompt="Do: {input}")
    with pytest.raises(GraphUsageError, match="neither an 'input' key nor a user message"):
        run.invoke(agent, {"messages": []})


def test_a_prompt_without_placeholders_is_one_message_made_once(run: Runner) -> None:
    model = ScriptedChatModel([tool_calls(("ping", {})), "done"])
    agent = ReactAgent(name="a", model=model, tools=[ping], system_prompt="Braces {{ok}}.")
    run.call(agent, "hi")
    first, second = (prompt.messages[0] for prompt in model.prompts)
    assert first == SystemMessage("Braces {ok}.")
    assert first is second  # the same object in every request: nothing made per call


class Answer(BaseModel):
    text: str


def test_input_skips_the_feedback_on_a_rejected_structured_answer(run: Runner) -> None:
    model = ScriptedChatModel(["not json", '{"text": "ok"}'], supports_native_output=True)
    agent = ReactAgent(
        name="a",
        model=model,
        system_prompt="Question: {input}",
        output_type=Answer,
        output_strategy="prompted",
    )
    run.call(agent, "why is the sky blue?")
    texts = system_texts(model)
    assert len(texts) == 2 and texts[0] == texts[1]
    assert texts[0].startswith("Question: why is the sky blue?\n\nGive your final answer as one")
    assert isinstance(model.prompts[1].messages[-1], UserMessage)  # the feedback itself


def test_a_template_without_text_around_it_may_render_empty(run: Runner) -> None:
    model = ScriptedChatModel(["ok"])
    agent = ReactAgent(name="a", model=model, system_prompt="{note}")
    state: dict[str, Any] = {"messages": [UserMessage("hi")], "note": ""}
    run.invoke(agent, state)
    assert model.prompts[0].messages == [UserMessage("hi")]  # no empty system message
