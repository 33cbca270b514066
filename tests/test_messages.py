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
    tool_response,
    tool_response_message,
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


# What default_serializer stored for these messages before its fast paths (bytes made by the
# generic encoder): the format must not change, so old checkpoints load and new ones match.
_STORED = (
    "83a86d6573736167657394c7490a93b767726170685f6167656e742e557365724d65737361676583a474"
    "657874a2676fa86d6574616461746181a16b9201c70301920203ac6d6573736167655f74797065a47573"
    "6572c0c7b60a93bc67726170685f6167656e742e417373697374616e744d65737361676585a474657874"
    "a0a86d6574616461746180ac6d6573736167655f74797065a9617373697374616e74aa746f6f6c5f6361"
    "6c6c73c7580191c7540a93b467726170685f6167656e742e546f6f6c43616c6c85a26964a663616c6c5f"
    "31a46e616d65a46563686fa9617267756d656e7473a87b2278223a20317da474797065a866756e637469"
    "6f6ea5696e64657800c0a77265667573616cc0c0c7900a93bf67726170685f6167656e742e546f6f6c52"
    "6573706f6e73654d65737361676583ac6d6573736167655f74797065a4746f6f6ca9726573706f6e7365"
    "73c7440191c7400a93b867726170685f6167656e742e546f6f6c526573706f6e736583a26964a663616c"
    "6c5f31a46e616d65a46563686fad726573706f6e73655f64617461a131c0a86d6574616461746180c0c7"
    "620a93bc67726170685f6167656e742e417373697374616e744d65737361676585a474657874a4646f6e"
    "65a86d6574616461746180ac6d6573736167655f74797065a9617373697374616e74aa746f6f6c5f6361"
    "6c6c73d40190a77265667573616cc0c0a174d40190a66e6573746564c70a0192d40190d60191d40190"
)


def test_stored_bytes_of_messages_do_not_change():
    messages = [
        UserMessage("go", metadata={"k": [1, (2, 3)]}),
        AssistantMessage(
            "", tool_calls=(ToolCall(id="call_1", name="echo", arguments='{"x": 1}', index=0),)
        ),
        ToolResponseMessage(responses=(ToolResponse(id="call_1", name="echo", response_data="1"),)),
        AssistantMessage("done", refusal=None),
    ]
    value = {"messages": messages, "t": (), "nested": ((), ((),))}
    stored = bytes.fromhex("".join(_STORED))
    assert default_serializer.dumps_mapping(value) == stored
    assert default_serializer.loads_mapping(stored) == value


def test_the_frameworks_tool_responses_are_what_validation_makes():
    """``tool_response``/``tool_response_message`` skip pydantic's validation for values of
    the right types: what they make must not differ from the validated message in anything."""
    made = tool_response_message((tool_response("c1", "echo", "ok"),))
    validated = ToolResponseMessage(
        responses=(ToolResponse(id="c1", name="echo", response_data="ok"),)
    )
    for ours, theirs in ((made, validated), (made.responses[0], validated.responses[0])):
        assert type(ours) is type(theirs) and ours == theirs
        assert list(ours.__dict__) == list(theirs.__dict__)
        assert ours.model_fields_set == theirs.model_fields_set
        assert (ours.__pydantic_extra__, ours.__pydantic_private__) == (None, None)
        assert default_serializer.dumps(ours) == default_serializer.dumps(theirs)
        with pytest.raises(pydantic.ValidationError):
            ours.__setattr__("metadata" if isinstance(ours, ToolResponseMessage) else "id", "x")
    assert made.metadata == {} and made.metadata is not tool_response_message(()).metadata
    # a value of another type is validated, and refused as validation refuses it
    with pytest.raises(pydantic.ValidationError):
        tool_response("c1", "echo", 3)  # type: ignore[arg-type]
    with pytest.raises(pydantic.ValidationError):
        tool_response_message(("not a response",))  # type: ignore[arg-type]
