"""graph_agent.server._wire_messages: values and messages as the Agent Protocol's JSON, and
back. The message dicts are checked against ``langchain_core`` (a dependency of the SDK), which
must read each of them back into the same dict.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

import pytest
from langchain_core.messages import messages_from_dict

from graph_agent import (
    AssistantMessage,
    Command,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from graph_agent.errors import GraphUsageError
from graph_agent.graph import Interrupt, Send
from graph_agent.server._wire_inbound import messages_from_wire
from graph_agent.server._wire_messages import (
    MessagesMemo,
    error_to_wire,
    message_to_wire,
    messages_to_wire,
    to_jsonable,
)

from .wire_kit import json_clean

# -- messages ------------------------------------------------------------------------------


def sdk_reads(message: dict[str, Any]) -> dict[str, Any]:
    """What langchain_core makes of a message dict (as it reads its own dumps), dumped again."""
    (read,) = messages_from_dict([{"type": message["type"], "data": dict(message)}])
    return read.model_dump()


ASKS = AssistantMessage(
    "Let me check.",
    tool_calls=(ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}'),),
    metadata={"usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}},
)
ANSWERS = ToolResponseMessage(
    responses=(
        ToolResponse(id="call_1", name="get_weather", response_data="sunny"),
        ToolResponse(id="call_2", name="get_time", response_data="noon"),
    )
)


def test_each_kind_of_message_as_langchain_dumps_it() -> None:
    human, system, ai, tool_a, tool_b = messages_to_wire(
        [UserMessage("hi", metadata={"id": "u1"}), SystemMessage("be brief"), ASKS, ANSWERS],
        thread_id="t",
    )
    assert human == {
        "content": "hi",
        "additional_kwargs": {},
        "response_metadata": {},
        "type": "human",
        "name": None,
        "id": "u1",
    }
    assert system["type"] == "system" and system["content"] == "be brief"
    assert ai == {
        "content": "Let me check.",
        "additional_kwargs": {},
        "response_metadata": {},
        "type": "ai",
        "name": None,
        "id": ai["id"],
        "tool_calls": [
            {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1", "type": "tool_call"}
        ],
        "invalid_tool_calls": [],
        "usage_metadata": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
    }
    # one ToolResponseMessage, one LangChain tool message per response
    assert [(t["type"], t["tool_call_id"], t["name"], t["content"]) for t in (tool_a, tool_b)] == [
        ("tool", "call_1", "get_weather", "sunny"),
        ("tool", "call_2", "get_time", "noon"),
    ]
    assert tool_a["status"] == "success" and tool_a["artifact"] is None
    for message in (human, system, ai, tool_a, tool_b):
        assert sdk_reads(message) == message  # langchain_core reads each back unchanged
        uuid.UUID(message["id"]) if message is not human else None


def test_refusal_bad_arguments_and_metadata() -> None:
    refused = AssistantMessage(refusal="I can't.", metadata={"return_direct": True, "name": "bob"})
    bad = AssistantMessage(
        tool_calls=(
            ToolCall(id="c1", name="f", arguments="{not json"),
            ToolCall(id="c2", name="g", arguments="[1]"),
            ToolCall(id="c3", name="h", arguments=""),
        )
    )
    (r,) = message_to_wire(refused)
    assert r["additional_kwargs"] == {"refusal": "I can't."} and r["content"] == ""
    assert r["response_metadata"] == {"return_direct": True} and r["name"] == "bob"
    (b,) = message_to_wire(bad)
    assert b["tool_calls"] == [{"name": "h", "args": {}, "id": "c3", "type": "tool_call"}]
    assert [(i["id"], i["args"], i["type"]) for i in b["invalid_tool_calls"]] == [
        ("c1", "{not json", "invalid_tool_call"),
        ("c2", "[1]", "invalid_tool_call"),
    ]
    assert "not JSON" in b["invalid_tool_calls"][0]["error"]
    for message in (r, b):
        assert sdk_reads(message) == message


def test_derived_ids_are_stable_distinct_and_per_thread() -> None:
    history = [UserMessage("yes"), AssistantMessage("ok"), UserMessage("yes"), ASKS, ANSWERS]
    first = [m["id"] for m in messages_to_wire(history, thread_id="t")]
    assert first == [m["id"] for m in messages_to_wire(list(history), thread_id="t")]
    assert len(set(first)) == len(first)  # the two "yes" differ
    other = [m["id"] for m in messages_to_wire(history, thread_id="u")]
    assert not set(first) & set(other)
    # a longer history keeps the ids of what it starts with (values at each step agree)
    longer = messages_to_wire([*history, AssistantMessage("done")], thread_id="t")
    assert [m["id"] for m in longer[: len(first)]] == first
    # an update converted with the state before it gets the ids values will give it
    appended = messages_to_wire(history[2:], thread_id="t", before=history[:2])
    assert [m["id"] for m in appended] == first[2:]
    # an explicit id wins; a batch's ids are per response
    batch = ToolResponseMessage(responses=ANSWERS.responses, metadata={"ids": ["x", None]})
    ids = [m["id"] for m in message_to_wire(batch, thread_id="t")]
    assert ids[0] == "x" and ids[1] != "x"


def test_to_jsonable_values() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    value = {
        "messages": (UserMessage("hi"),),
        "when": moment,
        "tags": {"a"},
        "nan": float("nan"),
        "raw": b"\x00\x01",
        "call": ToolCall(id="c", name="f"),
        "pause": Interrupt(id="i", node="n", when="during", value={"q": 1}),
        "command": Command(resume=1, goto=Send("n", {"x": 1})),
        "error": KeyError("k"),
        "obj": object,
    }
    got = json_clean(to_jsonable(value, thread_id="t"))
    assert got["messages"][0]["type"] == "human"
    assert got["when"] == "2026-01-02T03:04:05+00:00" and got["tags"] == ["a"]
    assert got["nan"] is None and got["raw"] == "AAE="
    assert got["call"]["id"] == "c" and got["pause"] == {"value": {"q": 1}, "id": "i"}
    assert got["command"] == {"goto": [{"node": "n", "args": {"x": 1}}], "resume": 1}
    assert got["error"] == {"error": "KeyError", "message": "'k'"}
    assert got["obj"] == "<class 'object'>"


def test_errors() -> None:
    assert error_to_wire(ValueError("bad")) == {"error": "ValueError", "message": "bad"}
    assert error_to_wire(GraphUsageError("no saver")) == {
        "error": "GraphUsageError", "message": "no saver"}  # fmt: skip

    class Leaky(Exception):
        pass

    hidden = error_to_wire(Leaky("password=hunter2"))
    assert hidden == {"error": "Leaky", "message": "An internal error occurred"}
    assert error_to_wire(Leaky("x"), reveal=lambda e: True)["message"] == "x"


# -- what clients send ---------------------------------------------------------------------


def test_messages_from_wire_accepts_the_forms_clients_send() -> None:
    got = messages_from_wire(
        [
            "plain",
            ["user", "pair"],
            {"role": "user", "content": "openai", "id": "u1"},
            {"type": "human", "content": [{"type": "text", "text": "blo"}, "cks"]},
            {"role": "developer", "content": "dev"},
            {"type": "system", "content": "sys"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "content": "r1", "tool_call_id": "c1", "name": "f"},
            {
                "type": "ai",
                "content": "x",
                "tool_calls": [{"name": "g", "args": {"a": 1}, "id": "c2", "type": "tool_call"}],
                "invalid_tool_calls": [{"name": "h", "args": "{bad", "id": "c3", "error": None}],
                "usage_metadata": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
                "additional_kwargs": {"refusal": "no"},
                "response_metadata": {"finish_reason": "stop"},
            },
            {"type": "tool", "content": "r2", "tool_call_id": "c2", "id": "t2"},
            {"type": "tool", "content": [{"type": "text", "text": "r3"}], "tool_call_id": "c3"},
        ]
    )
    assert [type(m).__name__ for m in got] == [
        "UserMessage", "UserMessage", "UserMessage", "UserMessage", "SystemMessage",
        "SystemMessage", "AssistantMessage", "ToolResponseMessage", "AssistantMessage",
        "ToolResponseMessage",
    ]  # fmt: skip
    assert [m.text for m in got[:6]] == ["plain", "pair", "openai", "blocks", "dev", "sys"]
    assert got[2].metadata == {"id": "u1"}
    first_ai, tool_1, second_ai, tools = got[6:]
    assert isinstance(first_ai, AssistantMessage) and first_ai.text == ""
    assert first_ai.tool_calls == (ToolCall(id="c1", name="f", arguments="{}"),)
    assert isinstance(tool_1, ToolResponseMessage)
    assert tool_1.responses == (ToolResponse(id="c1", name="f", response_data="r1"),)
    assert isinstance(second_ai, AssistantMessage)
    assert [(c.id, c.arguments) for c in second_ai.tool_calls] == [
        ("c2", '{"a": 1}'), ("c3", "{bad")]  # fmt: skip
    assert second_ai.refusal == "no"
    assert second_ai.metadata == {
        "finish_reason": "stop",
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
    }
    # consecutive tool messages are one batch, as our agent keeps them
    assert isinstance(tools, ToolResponseMessage)
    assert [r.response_data for r in tools.responses] == ["r2", "r3"]
    assert tools.metadata == {"ids": ["t2", None]}


def test_round_trips() -> None:
    ours = [UserMessage("hi"), SystemMessage("sys"), ASKS, ANSWERS, AssistantMessage("bye")]
    sent = messages_to_wire(ours, thread_id="t")
    back = messages_from_wire(json_clean(sent))
    # the same messages, each now carrying the id it was shown with
    assert [m.model_copy(update={"metadata": _without_ids(m.metadata)}) for m in back] == ours
    assert messages_to_wire(back, thread_id="other") == sent  # ids kept, not derived
    # and a client's messages survive our side unchanged
    client = [
        {"type": "human", "content": "q", "id": "h1"},
        {"type": "ai", "content": "", "id": "a1",
         "tool_calls": [{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}]},
        {"type": "tool", "content": "r", "tool_call_id": "c1", "name": "f", "id": "t1"},
    ]  # fmt: skip
    again = messages_to_wire(messages_from_wire(client), thread_id="t")
    assert [(m["type"], m["id"], m["content"]) for m in again] == [
        ("human", "h1", "q"), ("ai", "a1", ""), ("tool", "t1", "r")]  # fmt: skip
    assert again[1]["tool_calls"] == client[1]["tool_calls"]


def _without_ids(metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metadata.items() if k not in ("id", "ids")}


@pytest.mark.parametrize(
    ("items", "says"),
    [
        ({"content": "x"}, "messages[0] {'content': 'x'}: it has no 'role' or 'type'"),
        (42, "messages must be a list, got int 42"),
        ([{"role": "wizard", "content": "x"}], "unknown message role/type 'wizard'"),
        ([{"role": "user", "content": 3}], "'content' must be a string or a list, not int"),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": "u"}]}],
            "content block of type 'image_url' is not supported (text only)",
        ),
        (["ok", {"role": "tool", "content": "r"}], "messages[1]"),
        ([{"role": "tool", "content": "r"}], "a tool message needs a string 'tool_call_id'"),
        (
            [{"role": "assistant", "content": "", "tool_calls": [{"name": "f", "args": {}}]}],
            "has no string 'id'",
        ),
        (
            [{"type": "ai", "content": "", "tool_calls": [{"name": "f", "args": [1], "id": "c"}]}],
            "'args' must be a dict or a JSON string",
        ),
        ([{"type": "human", "content": "x", "id": 7}], "'id' must be a string"),
        ([["user"]], "a list item must be a [role, content] pair"),
        ([{"type": "remove", "id": "x"}], "unknown message role/type 'remove'"),
    ],
)
def test_bad_messages_are_named(items: Any, says: str) -> None:
    with pytest.raises(ValueError) as raised:
        messages_from_wire(items)
    assert says in str(raised.value)
    assert "accepted:" in str(raised.value)


def test_a_memo_converts_successive_states_as_messages_to_wire_does() -> None:
    """``MessagesMemo`` (a run's states, step after step) gives exactly what
    ``messages_to_wire`` gives: for a growing list, a list that changed in the middle, one
    trimmed, repeated identical messages (their occurrence ids), and a node's added
    messages counted after the state's."""
    call = ToolCall(id="c1", name="get_weather", arguments='{"city": "Rome"}')
    said = [
        UserMessage("hi"),
        AssistantMessage("", tool_calls=[call]),
        ToolResponseMessage(
            responses=[ToolResponse(id="c1", name="get_weather", response_data="sun")]
        ),
        AssistantMessage("yes"),
        UserMessage("hi"),
        AssistantMessage("yes"),
        UserMessage("given id", metadata={"id": "mine"}),
    ]
    memo = MessagesMemo("t")
    states = [said[:n] for n in range(1, len(said) + 1)]
    states += [[said[0], UserMessage("edited"), *said[2:]], said[:3], said]
    for state in states:
        assert memo.convert(state) == messages_to_wire(state, thread_id="t")
    for n in range(len(said)):
        added = said[n:]
        assert memo.convert_added(added, said[:n]) == messages_to_wire(
            added, thread_id="t", before=said[:n]
        )
    # a run's rhythm: a node's update, then the state that holds it (or holds another)
    memo = MessagesMemo("t")
    for n in range(len(said)):
        memo.convert_added(said[n : n + 1], said[:n])
        state = [*said[:n], UserMessage("other")] if n == 3 else said[: n + 1]
        assert memo.convert(state) == messages_to_wire(state, thread_id="t")
