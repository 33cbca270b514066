"""graph_agent.server._wire_encoder: a run's events as the parts of each stream mode, each
part read by the SDK's v2 stream converter and checked against its TypedDict.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessageChunk
from langgraph_sdk import schema
from langgraph_sdk._shared.utilities import _sse_to_v2_dict

from checkpoint import MemorySaver
from graph_agent import (
    END,
    START,
    Command,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    StateGraph,
    UserMessage,
)
from graph_agent.events import emit
from graph_agent.server._wire_encoder import RunStreamEncoder
from graph_agent.server._wire_messages import to_jsonable
from graph_agent.server._wire_state import state_to_wire, values_to_wire
from hooks import ToolFeedback

from .wire_kit import (
    asks,
    careful_agent,
    conforms,
    get_weather,
    json_clean,
    paused_subgraph,
)

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
    encoder = RunStreamEncoder(
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
    final = state_to_wire(agent.get_state(config))["values"]
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
    expected = [{"value": json_clean(to_jsonable(pause.value)), "id": pause.id}]
    assert parts_named(parts, "updates")[-1] == {"__interrupt__": expected}
    last = parts_named(parts, "values")[-1]
    assert last["__interrupt__"] == expected
    assert _sse_to_v2_dict("values", dict(last))["interrupts"] == expected  # as the SDK reads it
    paused = parts_named(parts, "tasks")[-1]
    assert paused["interrupts"] == expected and paused["name"] == pause.node

    encoder = RunStreamEncoder(modes=["values", "updates"], thread_id="hitl", run_id="r2")
    before = agent.get_state(config)
    assert encoder.resume(before) == [("values", values_to_wire(before.values, thread_id="hitl"))]
    resumed = encode(agent.graph, Command(resume=ToolFeedback.approve()), config)
    assert "__interrupt__" not in parts_named(resumed, "values")[-1]
    assert parts_named(resumed, "values")[-1] == json_clean(
        values_to_wire(agent.get_state(config).values, thread_id="hitl")
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
    encoder = RunStreamEncoder(modes=["values"], thread_id="t", run_id="r")
    assert encoder.error(KeyError("missing")) == [
        ("error", {"error": "KeyError", "message": "'missing'"})
    ]
