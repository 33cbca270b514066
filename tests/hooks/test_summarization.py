"""SummarizationHook: older messages become one summary message, what the model then sees."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from graph_agent import (
    AssistantMessage,
    FunctionChatModel,
    ModelError,
    OverAllState,
    Prompt,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent.messages import Message
from hooks import SummarizationHook
from hooks.builtin import approximate_tokens
from hooks.builtin.summarization import is_summary, render_transcript


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def call(agent: ReactAgent, value: Any, thread: str, mode: str) -> AssistantMessage:
    config = {"thread_id": thread}
    if mode == "sync":
        return agent.call(value, config)
    return asyncio.run(agent.acall(value, config))


class Summarizer:
    """A summarizer model that records the transcripts it was asked to summarize."""

    def __init__(self) -> None:
        self.transcripts: list[str] = []
        self.model = FunctionChatModel(self.reply)

    def reply(self, prompt: Prompt) -> str:
        assert len(prompt.messages) == 1 and isinstance(prompt.messages[0], UserMessage)
        transcript = prompt.messages[0].text.split("\n\n", 2)[-1]
        self.transcripts.append(transcript)
        return f"summary #{len(self.transcripts)}"


def history(turns: int) -> list[Message]:
    out: list[Message] = []
    for n in range(1, turns + 1):
        out += [UserMessage(f"u{n}"), AssistantMessage(f"a{n}")]
    return out


def pair(call_id: str) -> list[Message]:
    return [
        asks_echo(call_id),
        ToolResponseMessage(
            responses=(ToolResponse(id=call_id, name="echo", response_data="echoed"),)
        ),
    ]


def asks_echo(call_id: str) -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=[ToolCall(id=call_id, name="echo", arguments='{"x": 1}')]
    )


def texts(messages: Sequence[Message]) -> list[str]:
    return [m.text if not isinstance(m, ToolResponseMessage) else "<tool>" for m in messages]


def test_the_model_sees_the_summary_and_the_kept_messages(mode: str) -> None:
    summarizer = Summarizer()
    model = ScriptedChatModel(["final"])
    hook = SummarizationHook(summarizer.model, trigger_messages=4, keep_messages=2)
    agent = ReactAgent(name="s", model=model, system_prompt="sys", hooks=[hook])
    config = {"thread_id": "t"}
    agent.update_state(config, {"messages": history(2)})
    assert call(agent, "u3", "t", mode).text == "final"
    assert summarizer.transcripts == ["user: u1\nassistant: a1\nuser: u2"]
    sent = model.prompts[0].messages
    assert texts(sent) == ["sys", "Summary of the earlier conversation:\nsummary #1", "a2", "u3"]
    assert is_summary(sent[1]) and isinstance(sent[1], UserMessage)
    state = agent.get_state(config)
    assert state is not None
    assert texts(state.values["messages"]) == [sent[1].text, "a2", "u3", "final"]


def test_no_summary_below_the_trigger(mode: str) -> None:
    summarizer = Summarizer()
    model = ScriptedChatModel(["a1", "a2"])
    agent = ReactAgent(
        name="s",
        model=model,
        hooks=[SummarizationHook(summarizer.model, trigger_messages=3, keep_messages=1)],
    )
    call(agent, "u1", "t", mode)
    call(agent, "u2", "t", mode)  # 3 messages: not more than the trigger
    assert summarizer.transcripts == []
    assert texts(model.prompts[-1].messages) == ["u1", "a1", "u2"]


def test_a_token_trigger_with_an_injected_counter(mode: str) -> None:
    summarizer = Summarizer()
    counted: list[int] = []

    def words(messages: Sequence[Message]) -> int:
        total = sum(len(m.text.split()) for m in messages)
        counted.append(total)
        return total

    hook = SummarizationHook(
        summarizer.model, trigger_tokens=10, keep_messages=1, token_counter=words
    )
    model = ScriptedChatModel(["short answer", "ok"])
    agent = ReactAgent(name="s", model=model, hooks=[hook])
    call(agent, "one two three", "t", mode)
    assert summarizer.transcripts == []
    call(agent, "four five six seven eight nine", "t", mode)  # 3 + 2 + 6 = 11 > 10
    assert counted == [3, 11]
    assert summarizer.transcripts == ["user: one two three\nassistant: short answer"]
    assert texts(model.prompts[-1].messages)[1:] == ["four five six seven eight nine"]


def test_the_default_token_counter() -> None:
    assert approximate_tokens([UserMessage("x" * 8)]) == 2
    assert approximate_tokens([UserMessage("x" * 9)]) == 3
    with_call = pair("c1")[0]
    assert approximate_tokens([with_call]) == 4  # 'echo({"x": 1})' is 14 characters
    summarizer = Summarizer()
    hook = SummarizationHook(summarizer.model, trigger_tokens=5, keep_messages=1)
    assert not hook.triggered([UserMessage("x" * 20)])
    assert hook.triggered([UserMessage("x" * 21)])


def _reference_tokens(messages: Sequence[Message]) -> int:
    """The estimate as first written: the text, tool calls and result names joined."""
    chars = 0
    for message in messages:
        parts = [message.text]
        if isinstance(message, AssistantMessage):
            parts.extend(f"{c.name}({c.arguments})" for c in message.tool_calls)
        if isinstance(message, ToolResponseMessage):
            parts.extend(r.name for r in message.responses)
        chars += len(" ".join(p for p in parts if p))
    return -(-chars // 4)


def test_the_default_token_counter_counts_as_it_always_did() -> None:
    call = ToolCall(id="c", name="echo", arguments='{"x": "é ü"}')
    empty_call = ToolCall(id="d", name="", arguments="")
    messages: list[Message] = [
        UserMessage(""),
        UserMessage("hello there"),
        AssistantMessage(""),
        AssistantMessage("", tool_calls=(call,)),
        AssistantMessage("let me look", tool_calls=(call, empty_call)),
        ToolResponseMessage(),
        ToolResponseMessage(responses=(ToolResponse(id="c", name="", response_data=""),)),
        ToolResponseMessage(
            responses=(
                ToolResponse(id="c", name="", response_data=""),
                ToolResponse(id="d", name="", response_data=""),
            )
        ),
        ToolResponseMessage(
            responses=(
                ToolResponse(id="c", name="echo", response_data="x" * 37),
                ToolResponse(id="d", name="", response_data="yz"),
            )
        ),
    ]
    pinned = [0, 3, 0, 5, 9, 0, 0, 1, 12]
    assert [approximate_tokens([m]) for m in messages] == pinned
    assert [_reference_tokens([m]) for m in messages] == pinned
    for start in range(len(messages)):
        assert approximate_tokens(messages[start:]) == _reference_tokens(messages[start:])
    assert approximate_tokens(messages) == approximate_tokens(messages) == 27  # kept counts
    # a message counted and gone: another object (maybe at its address) is counted afresh
    for n in range(50):
        assert approximate_tokens([UserMessage("x" * (4 * n))]) == n


def test_a_tool_pair_is_never_split() -> None:
    summarizer = Summarizer()
    hook = SummarizationHook(summarizer.model, trigger_messages=3, keep_messages=1)
    messages = [UserMessage("u1"), AssistantMessage("a1"), UserMessage("u2"), *pair("c1")]
    older, kept = hook.split(messages)
    # the last message is a tool response: its assistant message is kept with it
    assert texts(older) == ["u1", "a1"]
    assert kept == [UserMessage("u2"), *pair("c1")]


def test_the_latest_user_message_is_kept_word_for_word(mode: str) -> None:
    summarizer = Summarizer()
    model = ScriptedChatModel([asks_echo("c1"), asks_echo("c2"), asks_echo("c3"), "done"])

    @tool
    def echo(x: int) -> str:
        """Echo."""
        return "echoed"

    hook = SummarizationHook(summarizer.model, trigger_messages=5, keep_messages=2)
    agent = ReactAgent(name="s", model=model, tools=[echo], hooks=[hook])
    assert call(agent, "the question", "t", mode).text == "done"
    # before the 4th model call: [q, A1, T1, A2, T2, A3, T3] -> summary, q, A3, T3
    assert summarizer.transcripts == [
        'assistant called echo({"x": 1})\ntool echo: echoed\nassistant called echo({"x": 1})\n'
        "tool echo: echoed"
    ]
    last = list(model.prompts[-1].messages)
    assert texts(last) == [
        "Summary of the earlier conversation:\nsummary #1",
        "the question",
        "",
        "<tool>",
    ]
    assert isinstance(last[2], AssistantMessage) and last[2].tool_calls[0].id == "c3"


def test_a_later_summary_folds_in_the_earlier_one(mode: str) -> None:
    summarizer = Summarizer()
    model = ScriptedChatModel(["a1", "a2", "a3", "a4"])
    hook = SummarizationHook(summarizer.model, trigger_messages=3, keep_messages=1)
    agent = ReactAgent(name="s", model=model, hooks=[hook])
    for n in range(1, 5):
        call(agent, f"u{n}", "t", mode)
    # more than 3 messages before the 3rd and the 4th model call
    assert summarizer.transcripts == [
        "user: u1\nassistant: a1\nuser: u2\nassistant: a2",
        "summary: Summary of the earlier conversation:\nsummary #1\nuser: u3\nassistant: a3",
    ]
    assert texts(model.prompts[-1].messages) == [
        "Summary of the earlier conversation:\nsummary #2",
        "u4",
    ]


def test_only_a_summary_before_the_tail_is_not_summarized_again() -> None:
    summarizer = Summarizer()
    hook = SummarizationHook(summarizer.model, trigger_tokens=1, keep_messages=2)
    summary = hook.summary_message("earlier")
    assert hook.split([summary, UserMessage("u"), AssistantMessage("a")]) == (
        [],
        [summary, UserMessage("u"), AssistantMessage("a")],
    )


def test_a_summarizer_failure_propagates_and_writes_nothing(mode: str) -> None:
    broken = ScriptedChatModel([ModelError("summarizer down")])
    model = ScriptedChatModel(["a1"])
    agent = ReactAgent(
        name="s",
        model=model,
        hooks=[SummarizationHook(broken, trigger_messages=1, keep_messages=0)],
    )
    config = {"thread_id": "t"}
    agent.update_state(config, {"messages": history(1)})
    with pytest.raises(ModelError, match="summarizer down"):
        call(agent, "u2", "t", mode)
    state = agent.get_state(config)
    assert state is not None
    # the failed step left nothing; the user's new message is kept to retry with
    assert texts(state.values["messages"]) == ["u1", "a1", "u2"]
    assert model.prompts == []


def test_custom_prompt_and_prefix() -> None:
    seen: list[str] = []

    def summarize(prompt: Prompt) -> str:
        seen.append(prompt.messages[0].text)
        return "S"

    hook = SummarizationHook(
        FunctionChatModel(summarize),
        trigger_messages=2,
        keep_messages=1,
        prompt="Short summary, please:\n{conversation}\n(end)",
        summary_prefix="[summary]",
    )
    result = hook.before_model(OverAllState({"messages": history(2)}), RunnableConfig())
    assert result is not None
    kept = result["messages"].value
    assert texts(kept) == ["[summary]\nS", "u2", "a2"]
    assert seen == ["Short summary, please:\nuser: u1\nassistant: a1\n(end)"]


def test_render_transcript() -> None:
    messages = [UserMessage("hi"), *pair("c1"), AssistantMessage("bye")]
    assert render_transcript(messages) == (
        'user: hi\nassistant called echo({"x": 1})\ntool echo: echoed\nassistant: bye'
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({}, ValueError, "needs trigger_messages, trigger_tokens or both"),
        ({"trigger_messages": 0}, ValueError, "trigger_messages must be a positive int"),
        ({"trigger_messages": 4, "keep_messages": 4}, ValueError, "must be below trigger_messages"),
        ({"trigger_tokens": 10, "keep_messages": -1}, ValueError, "keep_messages must be"),
        (
            {"trigger_tokens": 10, "prompt": "no slot"},
            ValueError,
            r"must contain '\{conversation\}'",
        ),
    ],
)
def test_arguments_are_checked(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        SummarizationHook(Summarizer().model, **kwargs)
    with pytest.raises(TypeError, match="must be a ChatModel"):
        SummarizationHook(object(), trigger_messages=3)  # type: ignore[arg-type]
