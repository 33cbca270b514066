"""graph_agent.server._wire_state: a run's input, command and config from what clients send;
thread states, threads, runs, assistants and graphs as the Agent Protocol's JSON, checked against
``langgraph_sdk.schema``'s TypedDicts.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from langgraph_sdk import schema

from checkpoint import MemorySaver
from graph_agent import (
    END,
    START,
    Command,
    RunnableConfig,
    StateGraph,
    UserMessage,
)
from graph_agent.server._wire_messages import to_jsonable
from graph_agent.server._wire_state import (
    assistant_to_wire,
    checkpoint_to_wire,
    command_from_wire,
    empty_state_to_wire,
    graph_to_wire,
    input_from_wire,
    run_config_from_wire,
    run_to_wire,
    state_to_wire,
    thread_interrupts,
    thread_status,
    thread_to_wire,
    values_to_wire,
)
from hooks import ToolFeedback

from .wire_kit import careful_agent, conforms, json_clean, paused_subgraph

# -- what clients send ---------------------------------------------------------------------


def test_input_command_and_config_from_wire() -> None:
    got = input_from_wire({"messages": [{"role": "user", "content": "hi"}], "n": 1})
    assert got == {"messages": [UserMessage("hi")], "n": 1}
    assert input_from_wire(None) is None
    with pytest.raises(ValueError, match=r"input\['messages'\]: messages\[0\]"):
        input_from_wire({"messages": [{"role": "?", "content": ""}]})
    with pytest.raises(ValueError, match="input must be a JSON object"):
        input_from_wire([["messages", []]])

    command = command_from_wire(
        {"resume": {"i1": "yes"}, "update": [["n", 1], ["messages", [{"type": "human", "content": "u"}]]]}
    )  # fmt: skip
    assert command.resume == {"i1": "yes"}
    assert command.update == {"n": 1, "messages": [UserMessage("u")]}
    assert command.goto is None
    with pytest.raises(ValueError, match=r"command\.goto is not supported"):
        command_from_wire({"resume": 1, "goto": ["a", {"node": "b", "input": {"x": 1}}]})
    assert not command_from_wire({}).has_resume  # the SDK drops resume=None
    with pytest.raises(ValueError, match="unknown field"):
        command_from_wire({"resume": 1, "graph": "x"})

    config = run_config_from_wire(
        "t1",
        {"config": {"configurable": {"thread_id": "ignored", "user_id": "u"}, "recursion_limit": 9},
         "checkpoint": {"checkpoint_id": "c1", "checkpoint_ns": ""}},
    )  # fmt: skip
    assert config == RunnableConfig(
        thread_id="t1", checkpoint_id="c1", metadata={"user_id": "u"}, recursion_limit=9
    )
    assert run_config_from_wire("t", {"checkpoint_id": "c2", "context": {"a": 1}}) == (
        RunnableConfig(thread_id="t", checkpoint_id="c2", metadata={"a": 1})
    )
    with pytest.raises(ValueError, match="both configurable and context"):
        run_config_from_wire("t", {"config": {"configurable": {"a": 1}}, "context": {"b": 2}})
    with pytest.raises(ValueError, match="root graph only"):
        run_config_from_wire("t", {"checkpoint": {"checkpoint_ns": "sub:1"}})


# -- states, threads, runs, assistants -----------------------------------------------------


def test_paused_thread_state() -> None:
    agent = careful_agent()
    config = RunnableConfig(thread_id="careful")
    agent.invoke("Weather in Rome?", config)
    snapshot = agent.get_state(config)
    assert snapshot is not None
    state = json_clean(state_to_wire(snapshot, metadata={"run_id": "r1"}))
    conforms(state, schema.ThreadState)
    (pause,) = snapshot.interrupts
    assert state["interrupts"] == [{"value": json_clean(to_jsonable(pause.value)), "id": pause.id}]
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
    assert thread_interrupts(state) == {task["id"]: state["interrupts"]}
    assert thread_status(snapshot) == "interrupted"
    # the same state read again (history) gives the messages the same ids
    again = state_to_wire(next(iter(agent.get_state_history(config, limit=1))))
    assert again["values"] == state["values"]

    agent.invoke(Command(resume=ToolFeedback.approve()), config)
    done = agent.get_state(config)
    assert thread_status(done) == "idle" and thread_status(done, busy=True) == "busy"
    assert thread_status(done, failed=True) == "error"
    finished = json_clean(state_to_wire(done))
    conforms(finished, schema.ThreadState)
    assert finished["tasks"] == [] and finished["interrupts"] == []
    assert (
        finished["values"]["messages"][: len(state["values"]["messages"])]
        == state["values"]["messages"]
    )


def test_paused_subgraph_state() -> None:
    desk = paused_subgraph()
    config = RunnableConfig(thread_id="desk")
    desk.invoke({"topic": "owls"}, config)
    snapshot = desk.get_state(config, subgraphs=True)
    state = json_clean(state_to_wire(snapshot))
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
    flat = state_to_wire(desk.get_state(config))
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
    state = state_to_wire(snapshot)
    assert state["interrupts"] == [] and state["tasks"][0]["interrupts"] == []
    assert thread_status(snapshot) == "interrupted"  # next is set
    assert values_to_wire(snapshot.values, interrupts=snapshot.interrupts) == {"x": 1}


def test_empty_thread_and_records_conform() -> None:
    # an empty thread's state has no checkpoint: null, as LangGraph answers (useStream tests
    # for it), though the SDK's TypedDict does not say it may be
    empty = empty_state_to_wire()
    assert empty["checkpoint"] is None
    conforms({**empty, "checkpoint": checkpoint_to_wire("t", None)}, schema.ThreadState)
    now = datetime.now(timezone.utc)
    thread = json_clean(
        thread_to_wire("t", created_at=now, updated_at=now, metadata={"a": 1}, status="idle")
    )
    conforms(thread, schema.Thread)
    assert thread["values"] is None and thread["interrupts"] == {}
    run = json_clean(
        run_to_wire(
            "r", thread_id="t", assistant_id="a", created_at=now, updated_at=now, status="pending"
        )
    )
    conforms(run, schema.Run)
    assistant = json_clean(assistant_to_wire("agent", created_at=now))
    conforms(assistant, schema.Assistant)
    # the id LangGraph's server gives the default assistant of a graph named "agent"
    assert assistant["assistant_id"] == "fe096781-5601-53d2-b2f6-0d3403f7e9ca"
    assert assistant["metadata"] == {"created_by": "system"} and assistant["name"] == "agent"


def test_graph_drawing() -> None:
    g = StateGraph()
    g.add_node("a", lambda s: {}).add_node("b", lambda s: {})
    g.add_edge(START, "a").add_conditional_edges("a", lambda s: "b", {"b": "b", "stop": END})
    g.add_edge("b", END)
    drawn = graph_to_wire(g.compile().get_graph())
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
