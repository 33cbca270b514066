"""Messages: positional text, frozen, tool calls, and checkpointing through the serializer."""

from __future__ import annotations

import pydantic
import pytest

from checkpoint import MemorySaver, default_serializer
from graph_agent import END, START, KeyStrategy, StateGraph
from graph_agent.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)


def test_text_is_positional_and_types_are_named():
    assert UserMessage("hi").text == "hi" and UserMessage(text="hi") == UserMessage("hi")
    assert [
        m.message_type for m in (SystemMessage("s"), UserMessage("u"), AssistantMessage("a"))
    ] == [
        "system",
        "user",
        "assistant",
    ]
    assert ToolResponseMessage().message_type == "tool"
    with pytest.raises(TypeError, match="give the text once"):
        UserMessage("a", text="b")


def test_messages_are_frozen_and_reject_unknown_fields():
    message = UserMessage("hi")
    with pytest.raises(pydantic.ValidationError):
        message.text = "changed"  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        UserMessage("hi", colour="red")  # type: ignore[call-arg]


def test_assistant_tool_calls():
    call = ToolCall(id="c1", name="weather", arguments='{"city": "Paris"}')
    message = AssistantMessage("", tool_calls=[call])
    assert message.has_tool_calls() and not AssistantMessage("done").has_tool_calls()
    assert message.tool_calls == (call,) and call.type == "function"
    assert ToolCall(id="c2", name="now").arguments == "{}"


def test_tool_response_message_text_joins_the_responses():
    message = ToolResponseMessage(
        responses=[
            ToolResponse(id="1", name="a", response_data="x"),
            ToolResponse(id="2", name="b", response_data="y"),
        ]
    )
    assert message.text == "x\ny"


@pytest.mark.parametrize(
    "message",
    [
        SystemMessage("rules"),
        UserMessage("hi", metadata={"lang": "en"}),
        AssistantMessage("ok", tool_calls=[ToolCall(id="c1", name="f", arguments="{}")]),
        ToolResponseMessage(responses=[ToolResponse(id="c1", name="f", response_data="done")]),
    ],
)
def test_every_message_round_trips_through_the_checkpoint_serializer(message):
    assert default_serializer.loads(default_serializer.dumps(message)) == message


def test_messages_live_in_checkpointed_graph_state():
    graph = StateGraph(key_strategies={"messages": KeyStrategy.APPEND})
    graph.add_node(
        "reply", lambda s: {"messages": [AssistantMessage(f"echo: {s['messages'][-1].text}")]}
    )
    graph.add_edge(START, "reply").add_edge("reply", END)
    app = graph.compile(saver=MemorySaver(copy=True))
    app.invoke({"messages": [UserMessage("hello")]}, {"thread_id": "m"})
    stored = app.get_state({"thread_id": "m"}).values["messages"]
    assert stored == [UserMessage("hello"), AssistantMessage("echo: hello")]
