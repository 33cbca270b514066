"""Prompt, options and ChatResponse, in particular folding a stream with ChatResponse.merge."""

from __future__ import annotations

import dataclasses

import pytest

from graph_agent.messages import AssistantMessage, SystemMessage, ToolCall, UserMessage
from graph_agent.models import (
    ChatOptions,
    ChatResponse,
    ChatResponseMetadata,
    Generation,
    Prompt,
    ToolCallingChatOptions,
    Usage,
)


def _fragment(index=None, id="", name="", arguments="", text="", finish=None, usage=None):
    calls = (
        [ToolCall(id=id, name=name, arguments=arguments, index=index)]
        if (id or name or arguments or index is not None)
        else []
    )
    return ChatResponse.of(AssistantMessage(text, tool_calls=calls), finish, usage)


def test_prompt_accepts_text_a_message_or_a_list():
    assert Prompt("hi").messages == [UserMessage("hi")]
    assert Prompt(SystemMessage("s")).messages == [SystemMessage("s")]
    assert Prompt((UserMessage("a"), UserMessage("b"))).messages == [
        UserMessage("a"),
        UserMessage("b"),
    ]
    options = ToolCallingChatOptions(model="m")
    assert Prompt("x", options).tool_options is options
    assert Prompt("x", ChatOptions()).tool_options is None
    assert ChatOptions(temperature=0.1).copy(temperature=0.5).temperature == 0.5


def test_merge_joins_text_and_keeps_the_last_finish_reason_and_usage():
    chunks = [_fragment(text="Hel"), _fragment(text="lo"), _fragment(finish="stop")]
    chunks.append(
        ChatResponse(metadata=ChatResponseMetadata(id="r1", model="m", usage=Usage(3, 2, 5)))
    )
    merged = ChatResponse.merge(chunks)
    assert merged.text == "Hello" and merged.result.finish_reason == "stop"
    assert merged.metadata.usage == Usage(3, 2, 5) and merged.metadata.id == "r1"


def test_merge_by_index_even_when_interleaved():
    chunks = [
        _fragment(index=0, id="a", name="f", arguments='{"x"'),
        _fragment(index=1, id="b", name="g", arguments="{"),
        _fragment(index=0, arguments=":1}"),
        _fragment(index=1, arguments="}", finish="tool_calls"),
    ]
    calls = ChatResponse.merge(chunks).result.output.tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [("a", "f", '{"x":1}'), ("b", "g", "{}")]


def test_merge_without_index_treats_empty_or_repeated_ids_as_continuations():
    chunks = [
        _fragment(id="a", name="f", arguments='{"q":'),
        _fragment(id="", arguments='"x"}'),  # an empty id continues
        _fragment(id="b", name="g", arguments='{"n":'),
        _fragment(id="b", arguments="2}"),  # vLLM repeats the id
    ]
    calls = ChatResponse.merge(chunks).result.output.tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("a", "f", '{"q":"x"}'),
        ("b", "g", '{"n":2}'),
    ]


@pytest.mark.parametrize("arguments", ["", "   ", "\n"])
def test_merge_normalises_blank_arguments(arguments):
    merged = ChatResponse.merge([_fragment(index=0, id="c", name="now", arguments=arguments)])
    assert merged.result.output.tool_calls[0].arguments == "{}"


def test_an_empty_response_explains_itself():
    with pytest.raises(IndexError, match="no generations"):
        ChatResponse().result  # noqa: B018 - the property raises
    assert ChatResponse().text == "" and not ChatResponse().has_tool_calls()
    assert Usage(1, 2, 3) + Usage(1, 1, 2) == Usage(2, 3, 5)


def test_of_makes_the_response_the_constructors_make():
    message = AssistantMessage("hi", tool_calls=[ToolCall(id="c1", name="f", arguments="{}")])
    usage = Usage(3, 4, 7)
    made = ChatResponse.of(message, "tool_calls", usage)
    assert made == ChatResponse(
        results=(Generation(message, "tool_calls"),),
        metadata=ChatResponseMetadata(usage=usage),
    )
    assert repr(made) == repr(
        ChatResponse((Generation(message, "tool_calls"),), ChatResponseMetadata(usage=usage))
    )
    assert hash(made.metadata.usage) == hash(usage)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.results = ()  # type: ignore[misc]
    # each response has dicts of its own
    other = ChatResponse.of(message)
    assert made.results[0].metadata is not other.results[0].metadata
    assert made.metadata.extra is not other.metadata.extra
    assert ChatResponse.of(message, id="r1", model="m").metadata == ChatResponseMetadata(
        id="r1", model="m"
    )


def test_of_on_a_subclass_makes_the_subclass():
    @dataclasses.dataclass(frozen=True, slots=True)
    class Tagged(ChatResponse):
        tag: str = "t"

    made = Tagged.of(AssistantMessage("hi"), "stop")
    assert type(made) is Tagged and made.tag == "t" and made.result.finish_reason == "stop"
