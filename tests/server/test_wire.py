"""graph_agent.server._wire: our objects as the Agent Protocol's JSON, and back.

What the official client expects is checked against the client itself where it says it:
``langgraph_sdk.schema``'s TypedDicts (every produced dict has their keys, with values of
their types), its SSE decoder (our bytes parse into the parts we meant) and its v2 stream
converter; and the message dicts against ``langchain_core`` (a dependency of the SDK), which
must read each of them back into the same dict.
"""

from __future__ import annotations

import json
import types
import typing
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import pytest
import typing_extensions

langgraph_sdk = pytest.importorskip("langgraph_sdk")  # the dev extra has it
from langchain_core.messages import AIMessageChunk, messages_from_dict  # noqa: E402
from langgraph_sdk import schema  # noqa: E402
from langgraph_sdk._shared.utilities import _sse_to_v2_dict  # noqa: E402
from langgraph_sdk.sse import BytesLineDecoder, SSEDecoder  # noqa: E402

from checkpoint import MemorySaver  # noqa: E402
from graph_agent import (  # noqa: E402
    END,
    START,
    AssistantMessage,
    Command,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    StateGraph,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    interrupt,
    tool,
)
from graph_agent.errors import GraphUsageError  # noqa: E402
from graph_agent.events import emit  # noqa: E402
from graph_agent.graph import Interrupt, Send  # noqa: E402
from graph_agent.server import _wire as wire  # noqa: E402
from hooks import HumanInTheLoopHook, ToolFeedback  # noqa: E402

# -- checking a dict against the SDK's TypedDicts --------------------------------------------

_SCHEMA_NS = vars(schema)


def conforms(value: Any, hint: Any, where: str = "$") -> None:
    """Assert ``value`` (JSON data) fits ``hint`` (a type of langgraph_sdk.schema)."""
    origin = typing.get_origin(hint)
    if hint is Any or hint is object:
        return
    if hint is None or hint is type(None):
        assert value is None, f"{where}: {value!r} is not None"
        return
    if typing_extensions.is_typeddict(hint):
        assert isinstance(value, dict), f"{where}: {type(value).__name__} is not a {hint.__name__}"
        hints = typing_extensions.get_type_hints(hint, globalns=_SCHEMA_NS, include_extras=True)
        # with postponed annotations the class cannot tell NotRequired keys: read the hints
        required = {
            k for k, sub in hints.items() if k in hint.__required_keys__ and _required(sub) is sub
        }
        missing = required - set(value)
        assert not missing, f"{where}: {hint.__name__} lacks {sorted(missing)}"
        for key, sub in hints.items():
            if key in value:
                conforms(value[key], _required(sub), f"{where}.{key}")
        return
    if origin in (typing.Union, types.UnionType):
        errors = []
        for option in typing.get_args(hint):
            try:
                conforms(value, option, where)
                return
            except AssertionError as error:
                errors.append(str(error))
        raise AssertionError(f"{where}: {value!r} fits none of {hint}: {errors}")
    if origin is typing.Literal:
        assert value in typing.get_args(hint), f"{where}: {value!r} not in {hint}"
        return
    if origin in (list, Sequence, typing.Sequence, tuple):
        assert isinstance(value, list), f"{where}: {type(value).__name__} is not a list"
        (item,) = typing.get_args(hint)[:1] or (Any,)
        for i, one in enumerate(value):
            conforms(one, item, f"{where}[{i}]")
        return
    if origin in (dict, Mapping):
        assert isinstance(value, dict), f"{where}: {type(value).__name__} is not a dict"
        args = typing.get_args(hint)
        for key, one in value.items():
            assert isinstance(key, str), f"{where}: key {key!r}"
            if args:
                conforms(one, args[1], f"{where}.{key}")
        return
    if hint is datetime:
        assert isinstance(value, str), f"{where}: {value!r} is not an ISO string"
        datetime.fromisoformat(value)
        return
    if getattr(hint, "_is_protocol", False):  # the SDK's "anything dict-like" (Input)
        assert isinstance(value, dict), f"{where}: {value!r} is not a dict"
        return
    if hint in (dict, list):
        assert isinstance(value, hint), f"{where}: {value!r} is not a {hint.__name__}"
        return
    if isinstance(hint, type):
        assert isinstance(value, hint) and not (hint is int and isinstance(value, bool)), (
            f"{where}: {value!r} is not a {hint.__name__}"
        )
        return
    raise AssertionError(f"{where}: cannot check against {hint!r}")


def _required(hint: Any) -> Any:
    """``hint`` without ``NotRequired[...]`` (itself when it has none)."""
    if typing.get_origin(hint) in (typing_extensions.NotRequired, typing_extensions.Required):
        return typing.get_args(hint)[0]
    return hint


def json_clean(value: Any) -> Any:
    """``value`` after a trip through JSON (what a client gets), checked to be plain JSON."""
    return json.loads(json.dumps(value, allow_nan=False))


def sdk_reads(message: dict[str, Any]) -> dict[str, Any]:
    """What langchain_core makes of a message dict (as it reads its own dumps), dumped again."""
    (read,) = messages_from_dict([{"type": message["type"], "data": dict(message)}])
    return read.model_dump()


# -- messages -------------------------------------------------------------------------------

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
    human, system, ai, tool_a, tool_b = wire.messages_to_wire(
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
    (r,) = wire.message_to_wire(refused)
    assert r["additional_kwargs"] == {"refusal": "I can't."} and r["content"] == ""
    assert r["response_metadata"] == {"return_direct": True} and r["name"] == "bob"
    (b,) = wire.message_to_wire(bad)
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
    first = [m["id"] for m in wire.messages_to_wire(history, thread_id="t")]
    assert first == [m["id"] for m in wire.messages_to_wire(list(history), thread_id="t")]
    assert len(set(first)) == len(first)  # the two "yes" differ
    other = [m["id"] for m in wire.messages_to_wire(history, thread_id="u")]
    assert not set(first) & set(other)
    # a longer history keeps the ids of what it starts with (values at each step agree)
    longer = wire.messages_to_wire([*history, AssistantMessage("done")], thread_id="t")
    assert [m["id"] for m in longer[: len(first)]] == first
    # an update converted with the state before it gets the ids values will give it
    appended = wire.messages_to_wire(history[2:], thread_id="t", before=history[:2])
    assert [m["id"] for m in appended] == first[2:]
    # an explicit id wins; a batch's ids are per response
    batch = ToolResponseMessage(responses=ANSWERS.responses, metadata={"ids": ["x", None]})
    ids = [m["id"] for m in wire.message_to_wire(batch, thread_id="t")]
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
    got = json_clean(wire.to_jsonable(value, thread_id="t"))
    assert got["messages"][0]["type"] == "human"
    assert got["when"] == "2026-01-02T03:04:05+00:00" and got["tags"] == ["a"]
    assert got["nan"] is None and got["raw"] == "AAE="
    assert got["call"]["id"] == "c" and got["pause"] == {"value": {"q": 1}, "id": "i"}
    assert got["command"] == {"goto": [{"node": "n", "args": {"x": 1}}], "resume": 1}
    assert got["error"] == {"error": "KeyError", "message": "'k'"}
    assert got["obj"] == "<class 'object'>"


# -- what clients send -----------------------------------------------------------------------


def test_messages_from_wire_accepts_the_forms_clients_send() -> None:
    got = wire.messages_from_wire(
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
    sent = wire.messages_to_wire(ours, thread_id="t")
    back = wire.messages_from_wire(json_clean(sent))
    # the same messages, each now carrying the id it was shown with
    assert [m.model_copy(update={"metadata": _without_ids(m.metadata)}) for m in back] == ours
    assert wire.messages_to_wire(back, thread_id="other") == sent  # ids kept, not derived
    # and a client's messages survive our side unchanged
    client = [
        {"type": "human", "content": "q", "id": "h1"},
        {"type": "ai", "content": "", "id": "a1",
         "tool_calls": [{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}]},
        {"type": "tool", "content": "r", "tool_call_id": "c1", "name": "f", "id": "t1"},
    ]  # fmt: skip
    again = wire.messages_to_wire(wire.messages_from_wire(client), thread_id="t")
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
        wire.messages_from_wire(items)
    assert says in str(raised.value)
    assert "accepted:" in str(raised.value)


def test_input_command_and_config_from_wire() -> None:
    got = wire.input_from_wire({"messages": [{"role": "user", "content": "hi"}], "n": 1})
    assert got == {"messages": [UserMessage("hi")], "n": 1}
    assert wire.input_from_wire(None) is None
    with pytest.raises(ValueError, match=r"input\['messages'\]: messages\[0\]"):
        wire.input_from_wire({"messages": [{"role": "?", "content": ""}]})
    with pytest.raises(ValueError, match="input must be a JSON object"):
        wire.input_from_wire([["messages", []]])

    command = wire.command_from_wire(
        {"resume": {"i1": "yes"}, "update": [["n", 1], ["messages", [{"type": "human", "content": "u"}]]],
         "goto": ["a", {"node": "b", "input": {"x": 1}}]}
    )  # fmt: skip
    assert command.resume == {"i1": "yes"}
    assert command.update == {"n": 1, "messages": [UserMessage("u")]}
    assert command.goto_targets() == ["a", Send("b", {"x": 1})]
    assert not wire.command_from_wire({}).has_resume  # the SDK drops resume=None
    with pytest.raises(ValueError, match="unknown field"):
        wire.command_from_wire({"resume": 1, "graph": "x"})

    config = wire.run_config_from_wire(
        "t1",
        {"config": {"configurable": {"thread_id": "ignored", "user_id": "u"}, "recursion_limit": 9},
         "checkpoint": {"checkpoint_id": "c1", "checkpoint_ns": ""}},
    )  # fmt: skip
    assert config == RunnableConfig(
        thread_id="t1", checkpoint_id="c1", metadata={"user_id": "u"}, recursion_limit=9
    )
    assert wire.run_config_from_wire("t", {"checkpoint_id": "c2", "context": {"a": 1}}) == (
        RunnableConfig(thread_id="t", checkpoint_id="c2", metadata={"a": 1})
    )
    with pytest.raises(ValueError, match="both configurable and context"):
        wire.run_config_from_wire("t", {"config": {"configurable": {"a": 1}}, "context": {"b": 2}})
    with pytest.raises(ValueError, match="root graph only"):
        wire.run_config_from_wire("t", {"checkpoint": {"checkpoint_ns": "sub:1"}})


# -- states, threads, runs, assistants -----------------------------------------------------------


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


def asks(city: str, call_id: str = "call_1", text: str = "") -> AssistantMessage:
    return AssistantMessage(
        text,
        tool_calls=(
            ToolCall(id=call_id, name="get_weather", arguments=json.dumps({"city": city})),
        ),
    )


def careful_agent() -> ReactAgent:
    return ReactAgent(
        name="careful",
        model=ScriptedChatModel([asks("Rome", text="Let me look."), "Sunny in Rome."]),
        tools=[get_weather],
        hooks=[HumanInTheLoopHook(["get_weather"])],
    )


def test_paused_thread_state() -> None:
    agent = careful_agent()
    config = RunnableConfig(thread_id="careful")
    agent.invoke("Weather in Rome?", config)
    snapshot = agent.get_state(config)
    assert snapshot is not None
    state = json_clean(wire.state_to_wire(snapshot, metadata={"run_id": "r1"}))
    conforms(state, schema.ThreadState)
    (pause,) = snapshot.interrupts
    assert state["interrupts"] == [
        {"value": json_clean(wire.to_jsonable(pause.value)), "id": pause.id}
    ]
    conforms(state["interrupts"][0], schema.Interrupt)
    assert state["next"] == list(snapshot.next)
    (task,) = state["tasks"]
    assert task["name"] == snapshot.next[0] and task["interrupts"] == state["interrupts"]
    assert state["checkpoint"] == {
        "thread_id": "careful",
        "checkpoint_ns": "",
        "checkpoint_id": snapshot.checkpoint_id,
        "checkpoint_map": None,
    }
    assert state["parent_checkpoint"]["checkpoint_id"] == snapshot.parent_id
    assert state["metadata"]["step"] == snapshot.step and state["metadata"]["run_id"] == "r1"
    assert datetime.fromisoformat(state["created_at"]) == snapshot.created_at
    assert wire.thread_interrupts(state) == {task["id"]: state["interrupts"]}
    assert wire.thread_status(snapshot) == "interrupted"
    # the same state read again (history) gives the messages the same ids
    again = wire.state_to_wire(next(iter(agent.get_state_history(config, limit=1))))
    assert again["values"] == state["values"]

    agent.invoke(Command(resume=ToolFeedback.approve()), config)
    done = agent.get_state(config)
    assert wire.thread_status(done) == "idle" and wire.thread_status(done, busy=True) == "busy"
    assert wire.thread_status(done, failed=True) == "error"
    finished = json_clean(wire.state_to_wire(done))
    conforms(finished, schema.ThreadState)
    assert finished["tasks"] == [] and finished["interrupts"] == []
    assert (
        finished["values"]["messages"][: len(state["values"]["messages"])]
        == state["values"]["messages"]
    )


def paused_subgraph() -> Any:
    def research(state: dict[str, Any]) -> dict[str, Any]:
        return {"notes": f"notes on {state['topic']}"}

    def check(state: dict[str, Any]) -> dict[str, Any]:
        return {"checked": interrupt("ok?")}

    child = StateGraph()
    child.add_node("research", research).add_node("check", check)
    child.add_edge(START, "research").add_edge("research", "check").add_edge("check", END)
    parent = StateGraph()
    parent.add_node("sub", child.compile()).add_node("write", lambda s: {"report": s["notes"]})
    parent.add_edge(START, "sub").add_edge("sub", "write").add_edge("write", END)
    return parent.compile(saver=MemorySaver())


def test_paused_subgraph_state() -> None:
    desk = paused_subgraph()
    config = RunnableConfig(thread_id="desk")
    desk.invoke({"topic": "owls"}, config)
    snapshot = desk.get_state(config, subgraphs=True)
    state = json_clean(wire.state_to_wire(snapshot))
    conforms(state, schema.ThreadState)
    (task,) = state["tasks"]
    (pause,) = snapshot.interrupts
    node, task_id = pause.namespace[0].split(":")
    assert (task["name"], task["id"]) == (node, task_id) == ("sub", task_id)
    assert task["interrupts"] == [{"value": "ok?", "id": pause.id}]
    assert task["checkpoint"]["checkpoint_ns"] == f"sub:{task_id}"
    inner = task["state"]
    assert inner["values"]["notes"] == "notes on owls" and inner["next"] == ["check"]
    assert inner["checkpoint"]["thread_id"] == "desk"  # the client's thread, not the saver's
    assert inner["checkpoint"]["checkpoint_ns"] == f"sub:{task_id}"
    assert inner["tasks"][0]["interrupts"] == task["interrupts"]
    # without subgraphs=True: the task says where the subgraph's checkpoint is, no state
    flat = wire.state_to_wire(desk.get_state(config))
    assert flat["tasks"][0]["state"] is None and flat["tasks"][0]["checkpoint"] is not None


def test_static_interrupts_are_not_interrupts_on_the_wire() -> None:
    g = StateGraph()
    g.add_node("a", lambda s: {"x": 1}).add_node("b", lambda s: {"x": 2})
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = g.compile(saver=MemorySaver(), interrupt_before=["b"])
    config = RunnableConfig(thread_id="static")
    app.invoke({}, config)
    snapshot = app.get_state(config)
    assert snapshot.interrupts and snapshot.interrupts[0].when == "before"
    state = wire.state_to_wire(snapshot)
    assert state["interrupts"] == [] and state["tasks"][0]["interrupts"] == []
    assert wire.thread_status(snapshot) == "interrupted"  # next is set
    assert wire.values_to_wire(snapshot.values, interrupts=snapshot.interrupts) == {"x": 1}


def test_empty_thread_and_records_conform() -> None:
    # an empty thread's state has no checkpoint: null, as LangGraph answers (useStream tests
    # for it), though the SDK's TypedDict does not say it may be
    empty = wire.empty_state_to_wire()
    assert empty["checkpoint"] is None
    conforms({**empty, "checkpoint": wire.checkpoint_to_wire("t", None)}, schema.ThreadState)
    now = datetime.now(timezone.utc)
    thread = json_clean(
        wire.thread_to_wire("t", created_at=now, updated_at=now, metadata={"a": 1}, status="idle")
    )
    conforms(thread, schema.Thread)
    assert thread["values"] is None and thread["interrupts"] == {}
    run = json_clean(
        wire.run_to_wire(
            "r", thread_id="t", assistant_id="a", created_at=now, updated_at=now, status="pending"
        )
    )
    conforms(run, schema.Run)
    assistant = json_clean(wire.assistant_to_wire("agent", created_at=now))
    conforms(assistant, schema.Assistant)
    # the id LangGraph's server gives the default assistant of a graph named "agent"
    assert assistant["assistant_id"] == "fe096781-5601-53d2-b2f6-0d3403f7e9ca"
    assert assistant["metadata"] == {"created_by": "system"} and assistant["name"] == "agent"


def test_graph_drawing() -> None:
    g = StateGraph()
    g.add_node("a", lambda s: {}).add_node("b", lambda s: {})
    g.add_edge(START, "a").add_conditional_edges("a", lambda s: "b", {"b": "b", "stop": END})
    g.add_edge("b", END)
    drawn = wire.graph_to_wire(g.compile().get_graph())
    assert drawn["nodes"] == [
        {"id": "__start__", "type": "runnable", "data": {"name": "__start__"}},
        {"id": "a", "type": "runnable", "data": {"name": "a"}},
        {"id": "b", "type": "runnable", "data": {"name": "b"}},
        {"id": "__end__"},
    ]
    assert {"source": "a", "target": "__end__", "data": "stop", "conditional": True} in drawn[
        "edges"
    ]
    assert {"source": "__start__", "target": "a"} in drawn["edges"]


def test_errors() -> None:
    assert wire.error_to_wire(ValueError("bad")) == {"error": "ValueError", "message": "bad"}
    assert wire.error_to_wire(GraphUsageError("no saver")) == {
        "error": "GraphUsageError", "message": "no saver"}  # fmt: skip

    class Leaky(Exception):
        pass

    hidden = wire.error_to_wire(Leaky("password=hunter2"))
    assert hidden == {"error": "Leaky", "message": "An internal error occurred"}
    assert wire.error_to_wire(Leaky("x"), reveal=lambda e: True)["message"] == "x"


# -- SSE and stream modes ---------------------------------------------------------------------


def decode(body: bytes, chunk: int = 7) -> list[schema.StreamPart]:
    """``body`` read by the SDK's own SSE parser, fed in small pieces as a socket would."""
    lines = BytesLineDecoder()
    decoder = SSEDecoder()
    parts = []
    for at in range(0, len(body), chunk):
        for line in lines.decode(body[at : at + chunk]):
            part = decoder.decode(bytes(line).rstrip(b"\n"))
            if part is not None:
                parts.append(part)
    for line in lines.flush():
        part = decoder.decode(bytes(line))
        if part is not None:
            parts.append(part)
    return parts


def test_sse_bytes_parse_in_the_client() -> None:
    body = (
        wire.sse_event("metadata", {"run_id": "r", "attempt": 1})
        + wire.HEARTBEAT
        + wire.sse_event("values|sub:1", {"text": "two\nlines é"}, id="5")
        + wire.sse_event("bad\nname", [1, None])
    )
    assert body.startswith(b'event: metadata\r\ndata: {"run_id":"r","attempt":1}\r\n\r\n')
    parts = decode(body)
    assert [(p.event, p.data, p.id) for p in parts] == [
        ("metadata", {"run_id": "r", "attempt": 1}, None),
        ("values|sub:1", {"text": "two\nlines é"}, "5"),
        ("badname", [1, None], "5"),  # the last id stays, as the SSE spec says
    ]
    with pytest.raises(ValueError):
        wire.sse_event("values", {"x": float("nan")})  # to_jsonable first


def test_stream_modes() -> None:
    assert wire.parse_stream_modes(None) == ["values"]
    assert wire.parse_stream_modes("") == ["values"]
    assert wire.parse_stream_modes("updates") == ["updates"]
    assert wire.parse_stream_modes('["values","messages-tuple"]') == ["values", "messages-tuple"]
    assert wire.parse_stream_modes(["values", "values", "custom"]) == ["values", "custom"]
    assert wire.parse_stream_modes(None, default=sorted(wire.STREAM_MODES)) == sorted(
        wire.STREAM_MODES
    )
    with pytest.raises(ValueError, match="'run_events' streams graph-agent's own"):
        wire.parse_stream_modes(["values", "events"])
    with pytest.raises(ValueError, match="only supported on the v2"):
        wire.parse_stream_modes("tools")
    with pytest.raises(ValueError, match="unknown stream_mode 'nope'"):
        wire.parse_stream_modes("nope")
    assert wire.event_name("values", ("sub:1", "inner:2"), subgraphs=True) == "values|sub:1|inner:2"
    assert wire.event_name("values", ("sub:1",)) == "values"


ALL_MODES = [
    "values",
    "updates",
    "messages-tuple",
    "custom",
    "tasks",
    "checkpoints",
    "debug",
    "run_events",
]


def encode(
    graph: Any,
    inputs: Any,
    config: RunnableConfig,
    modes: Sequence[str] = ALL_MODES,
    subgraphs: bool = False,
) -> list[tuple[str, Any]]:
    """Run ``graph`` and encode its events as a server would, reading each checkpoint (a
    subgraph's too) for the modes that show the state."""
    encoder = wire.RunStreamEncoder(
        modes=modes, thread_id=config.thread_id, run_id="run-1", subgraphs=subgraphs,
        metadata={"graph_id": "g"},
    )  # fmt: skip
    parts = encoder.start()
    for event in graph.stream_events(inputs, config):
        parts += encoder.event(event)
        if event.kind == "checkpoint" and encoder.needs_snapshots and not event.namespace:
            snapshot = graph.get_state(config.replace(checkpoint_id=event.checkpoint_id))
            parts += encoder.checkpoint(snapshot, namespace=event.namespace)
    return [(name, json_clean(data)) for name, data in parts]


V2_PARTS = {
    "values": schema.ValuesStreamPart,
    "updates": schema.UpdatesStreamPart,
    "messages": schema.MessagesTupleStreamPart,
    "messages/partial": schema.MessagesPartialStreamPart,
    "messages/complete": schema.MessagesCompleteStreamPart,
    "messages/metadata": schema.MessagesMetadataStreamPart,
    "custom": schema.CustomStreamPart,
    "checkpoints": schema.CheckpointsStreamPart,
    "tasks": schema.TasksStreamPart,
    "debug": schema.DebugStreamPart,
    "metadata": schema.MetadataStreamPart,
}


def check_v2(parts: list[tuple[str, Any]]) -> None:
    """Each part through the SDK's v2 converter, against its v2 TypedDict."""
    for name, data in parts:
        v2 = _sse_to_v2_dict(name, json_clean(data))
        assert v2 is not None
        kind = typing.cast(str, v2["type"])
        if kind in V2_PARTS:
            conforms(v2, V2_PARTS[kind], name)


def test_agent_run_streams_every_mode() -> None:
    agent = ReactAgent(
        name="weather",
        model=ScriptedChatModel([asks("Paris", text="Checking."), "Sunny in Paris."]),
        tools=[get_weather],
    )
    config = RunnableConfig(thread_id="w")
    parts = encode(agent.graph, {"messages": [UserMessage("Weather in Paris?")]}, config)
    check_v2([p for p in parts if p[0] != "run_events"])
    names = [name for name, _ in parts]
    assert names[0] == "metadata" and parts[0][1] == {"run_id": "run-1", "attempt": 1}
    values = [data for name, data in parts if name == "values"]
    final = wire.state_to_wire(agent.get_state(config))["values"]
    assert values[-1] == json_clean(final)
    assert [len(v["messages"]) for v in values] == [1, 2, 3, 4]  # the input, then each step
    updates = [data for name, data in parts if name == "updates"]
    assert [next(iter(u)) for u in updates] == ["model", "tools", "model"]
    # an update's messages have the ids they have in values
    final_ids = [m["id"] for m in final["messages"]]
    assert [m["id"] for u in updates for m in next(iter(u.values()))["messages"]] == final_ids[1:]

    messages = [data for name, data in parts if name == "messages"]
    chunks = [m for m, _ in messages if m["type"] == "AIMessageChunk"]
    assert "".join(c["content"] for c in chunks) == "Checking.Sunny in Paris."
    assert len({c["id"] for c in chunks}) == 2  # one id per model call
    for chunk in chunks:
        assert (
            AIMessageChunk(**{k: v for k, v in chunk.items() if k != "type"}).content
            == chunk["content"]
        )
    calls = [c for c in chunks if c["tool_call_chunks"]]
    assert calls[0]["tool_call_chunks"][0]["name"] == "get_weather"
    assert calls[0]["tool_calls"][0]["args"] == {"city": "Paris"}
    # the tool result was not streamed: it comes whole, with its values id
    (tool_message,) = [m for m, _ in messages if m["type"] == "tool"]
    assert tool_message["id"] == final["messages"][2]["id"]
    metadata = messages[0][1]
    assert metadata["langgraph_node"] == "model" and metadata["langgraph_step"] == 1
    assert metadata["run_id"] == "run-1" and metadata["thread_id"] == "w"
    assert metadata["graph_id"] == "g" and metadata["ls_model_type"] == "chat"
    assert metadata["langgraph_checkpoint_ns"].startswith("model:")

    tasks = [data for name, data in parts if name == "tasks"]
    assert [(t["name"], "result" in t) for t in tasks] == [
        ("model", False), ("model", True), ("tools", False), ("tools", True),
        ("model", False), ("model", True),
    ]  # fmt: skip
    assert tasks[0]["id"] == tasks[1]["id"] and tasks[1]["error"] is None
    checkpoints = [data for name, data in parts if name == "checkpoints"]
    assert [c["metadata"]["source"] for c in checkpoints] == ["input", "loop", "loop", "loop"]
    assert checkpoints[1]["parent_config"] == checkpoints[0]["config"]
    debug = [data for name, data in parts if name == "debug"]
    assert {d["type"] for d in debug} == {"task", "task_result", "checkpoint"}
    run_events = [data for name, data in parts if name == "run_events"]
    assert run_events[0]["kind"] == "run_start" and run_events[-1]["kind"] == "run_end"
    assert run_events[-1]["values"] == final


def test_legacy_messages_mode() -> None:
    agent = ReactAgent(
        name="weather",
        model=ScriptedChatModel([asks("Paris"), "Sunny in Paris."]),
        tools=[get_weather],
    )
    parts = encode(
        agent.graph, {"messages": [UserMessage("Hi")]}, RunnableConfig(thread_id="l"), ["messages"]
    )
    check_v2(parts)
    names = [name for name, _ in parts]
    assert names[1] == "messages/metadata" and "messages/complete" in names
    partials = [data[0] for name, data in parts if name == "messages/partial"]
    assert partials[-1]["content"] == "Sunny in Paris."  # the chunks so far, added up
    assert partials[0]["tool_call_chunks"][0]["args"] == '{"city": "Paris"}'
    metadata = [data for name, data in parts if name == "messages/metadata"]
    assert len(metadata) == 3  # two model answers and the tool result, each once


def test_pause_streams_the_interrupt() -> None:
    agent = careful_agent()
    config = RunnableConfig(thread_id="hitl")
    parts = encode(agent.graph, {"messages": [UserMessage("Weather in Rome?")]}, config)
    check_v2([p for p in parts if p[0] != "run_events"])
    (pause,) = agent.get_state(config).interrupts
    expected = [{"value": json_clean(wire.to_jsonable(pause.value)), "id": pause.id}]
    assert parts_named(parts, "updates")[-1] == {"__interrupt__": expected}
    last = parts_named(parts, "values")[-1]
    assert last["__interrupt__"] == expected
    assert _sse_to_v2_dict("values", dict(last))["interrupts"] == expected  # as the SDK reads it
    paused = parts_named(parts, "tasks")[-1]
    assert paused["interrupts"] == expected and paused["name"] == pause.node

    encoder = wire.RunStreamEncoder(modes=["values", "updates"], thread_id="hitl", run_id="r2")
    before = agent.get_state(config)
    assert encoder.resume(before) == [
        ("values", wire.values_to_wire(before.values, thread_id="hitl"))
    ]
    resumed = encode(agent.graph, Command(resume=ToolFeedback.approve()), config)
    assert "__interrupt__" not in parts_named(resumed, "values")[-1]
    assert parts_named(resumed, "values")[-1] == json_clean(
        wire.values_to_wire(agent.get_state(config).values, thread_id="hitl")
    )


def parts_named(parts: list[tuple[str, Any]], name: str) -> list[Any]:
    return [data for n, data in parts if n == name]


def test_static_pause_streams_an_empty_interrupt() -> None:
    g = StateGraph()
    g.add_node("a", lambda s: {"x": 1}).add_node("b", lambda s: {"x": 2})
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = g.compile(saver=MemorySaver(), interrupt_before=["b"])
    parts = encode(app, {}, RunnableConfig(thread_id="s"), ["values", "updates"])
    assert parts_named(parts, "updates") == [{"a": {"x": 1}}, {"__interrupt__": []}]
    assert parts_named(parts, "values") == [{}, {"x": 1}]


def test_subgraph_parts_only_with_subgraphs() -> None:
    desk = paused_subgraph()
    modes = ["updates", "tasks", "run_events"]
    flat = encode(desk, {"topic": "owls"}, RunnableConfig(thread_id="f"), modes)
    assert all("|" not in name for name, _ in flat)
    assert all(data["namespace"] == [] for name, data in flat if name == "run_events")
    deep = encode(desk, {"topic": "owls"}, RunnableConfig(thread_id="d"), modes, subgraphs=True)
    (sub,) = {name.split("|", 1)[1] for name, _ in deep if "|" in name}
    assert sub.startswith("sub:")  # the subgraph's namespace, as its events carry it
    assert parts_named(deep, f"updates|{sub}") == [{"research": {"notes": "notes on owls"}}]
    paused = parts_named(deep, f"tasks|{sub}")[-1]
    assert paused["name"] == "check" and paused["interrupts"][0]["value"] == "ok?"
    # the parent's task that runs the subgraph is paused with the same interrupt
    assert parts_named(deep, "tasks")[-1]["interrupts"] == paused["interrupts"]
    check_v2([p for p in deep if not p[0].startswith("run_events")])


def test_custom_events_and_errors() -> None:
    def draft(state: dict[str, Any]) -> dict[str, Any]:
        emit({"progress": 0.5})
        return {"text": "a draft"}

    g = StateGraph()
    g.add_node("draft", draft).add_edge(START, "draft").add_edge("draft", END)
    parts = encode(g.compile(saver=MemorySaver()), {}, RunnableConfig(thread_id="c"), ["custom"])
    assert parts == [("metadata", {"run_id": "run-1", "attempt": 1}), ("custom", {"progress": 0.5})]
    encoder = wire.RunStreamEncoder(modes=["values"], thread_id="t", run_id="r")
    assert encoder.error(KeyError("missing")) == [
        ("error", {"error": "KeyError", "message": "'missing'"})
    ]


def test_run_events_are_json() -> None:
    agent = careful_agent()
    config = RunnableConfig(thread_id="events")
    for event in agent.stream_events("Weather in Rome?", config):
        data = json_clean(wire.run_event_to_wire(event, thread_id="events"))
        assert data["kind"] == event.kind and data["namespace"] == list(event.namespace)
        if event.kind == "interrupt":
            assert set(data["interrupt"]) == {"value", "id", "node", "when", "namespace"}
        if event.kind == "model_start":
            assert data["messages"][-1]["type"] == "human"
