"""ScriptedChatModel and FunctionChatModel: deterministic offline models."""

from __future__ import annotations

import asyncio

import pytest

from graph_agent.errors import ModelError
from graph_agent.messages import AssistantMessage, ToolCall
from graph_agent.models import ChatModel, ChatResponse, FunctionChatModel, Prompt, ScriptedChatModel


def test_scripted_plays_responses_in_order_and_records_prompts():
    model = ScriptedChatModel(
        ["one", AssistantMessage("two"), ChatResponse.of(AssistantMessage("three"), "length")]
    )
    assert isinstance(model, ChatModel)
    assert [model.call(Prompt(q)).text for q in ("a", "b", "c")] == ["one", "two", "three"]
    assert [p.messages[0].text for p in model.prompts] == ["a", "b", "c"]
    assert model.remaining == 0


def test_scripted_fails_clearly_when_the_script_runs_out():
    model = ScriptedChatModel(["only"])
    model.call(Prompt("a"))
    with pytest.raises(ModelError, match="ran out of responses: it was given 1 and this is call 2"):
        model.call(Prompt("b"))


def test_scripted_can_script_a_failure():
    model = ScriptedChatModel([ModelError("rate limited", status=429), "ok"])
    with pytest.raises(ModelError, match="rate limited"):
        model.call(Prompt("a"))
    assert model.call(Prompt("a")).text == "ok"


def test_streaming_yields_chunks_that_merge_into_the_response():
    message = AssistantMessage(
        "it is sunny", tool_calls=[ToolCall(id="c1", name="f", arguments='{"a": 1}')]
    )
    model = ScriptedChatModel([message, message])
    chunks = list(model.stream(Prompt("x")))
    assert len(chunks) > 2 and "".join(c.text for c in chunks) == "it is sunny"
    merged = ChatResponse.merge(chunks)
    assert merged.result.output == message and merged.result.finish_reason == "tool_calls"

    async def collect():
        return [c async for c in model.astream(Prompt("y"))]

    assert ChatResponse.merge(asyncio.run(collect())).result.output == message


def test_function_model_answers_from_the_prompt_sync_and_async():
    model = FunctionChatModel(lambda prompt: f"you said {prompt.messages[-1].text}")
    assert model.call(Prompt("hi")).text == "you said hi"
    assert ChatResponse.merge(model.stream(Prompt("yo"))).text == "you said yo"

    async def answer(prompt):
        return AssistantMessage("async answer")

    async_model = FunctionChatModel(answer)
    assert asyncio.run(async_model.acall(Prompt("q"))).text == "async answer"
    with pytest.raises(ModelError, match="async; use acall"):
        async_model.call(Prompt("q"))
    assert len(model.prompts) == 2
