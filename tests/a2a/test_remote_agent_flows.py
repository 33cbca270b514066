"""A remote A2A agent's ``input-required`` pauses become our interrupts, answered by resuming
our run (the answer goes to the same remote task); and the remote agent as a sub-agent of a
``SequentialAgent``, where it stands as a ``ReactAgent`` would."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from checkpoint import SqliteSaver
from graph_agent import (
    AssistantMessage,
    Command,
    ReactAgent,
    ScriptedChatModel,
    SequentialAgent,
    SupervisorAgent,
    ToolCall,
    ToolResponseMessage,
)
from graph_agent.a2a import RemoteA2AAgent
from graph_agent.events import ToolEnd


def asks(input: str, call_id: str = "call_1") -> AssistantMessage:
    arguments = json.dumps({"input": input})
    return AssistantMessage(
        "", tool_calls=[ToolCall(id=call_id, name="travel", arguments=arguments)]
    )


def question(pause: Any) -> dict[str, Any]:
    value: dict[str, Any] = pause.value
    return value


def test_a_remote_question_pauses_our_run_and_the_answer_completes_the_same_task(
    remote_url: str,
) -> None:
    remote = RemoteA2AAgent(remote_url)
    thread = {"thread_id": "booking"}
    remote.invoke("book a flight", thread)
    (pause,) = remote.get_state(thread).interrupts
    asked = question(pause)
    assert (asked["question"], asked["agent"]) == ("Which city?", "travel")
    answer = remote.call(Command(resume="Paris"), thread)
    assert answer.text == f"Booked for Paris (task {asked['task_id']})"
    assert not remote.get_state(thread).interrupts
    # the thread goes on in the same remote context
    assert remote.call("thanks", thread).text == "Echo: thanks (turn 3)"


def test_the_pause_is_answered_by_its_interrupt_id_too_async(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    thread = {"thread_id": "async-booking"}

    async def main() -> tuple[str, str]:
        await remote.ainvoke("book it", thread)
        state = await remote.aget_state(thread)
        assert state is not None
        (pause,) = state.interrupts
        answer = await remote.acall(Command(resume={pause.id: "Rome"}), thread)
        return answer.text, question(pause)["task_id"]

    text, task_id = asyncio.run(main())
    assert text == f"Booked for Rome (task {task_id})"


def test_as_a_tool_a_remote_question_pauses_the_caller_which_resumes_it(
    remote_url: str,
) -> None:
    remote = RemoteA2AAgent(remote_url)
    model = ScriptedChatModel([asks("book a flight"), "Your flight is booked."])
    agent = ReactAgent(name="assistant", model=model, tools=[remote.as_tool()])
    thread = {"thread_id": "caller"}
    agent.invoke("book me a flight", thread)
    (pause,) = agent.get_state(thread).interrupts
    assert question(pause)["question"] == "Which city?"
    assert pause.namespace and pause.namespace[0].startswith("travel:")
    events = list(agent.stream_events(Command(resume="Oslo"), thread))
    results = [e.result for e in events if isinstance(e, ToolEnd) and not e.namespace]
    assert results == [f"Booked for Oslo (task {question(pause)['task_id']})"]
    assert agent.get_state(thread).values["messages"][-1].text == "Your flight is booked."


def test_as_a_sub_agent_of_a_sequential_flow(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    planner = ReactAgent(
        name="planner",
        model=ScriptedChatModel(
            ["Plan: Rome in May.", "Plan: Oslo in June.", "Plan: Paris in July."]
        ),
        description="Plans trips.",
    )
    flow = SequentialAgent(name="trip", sub_agents=[planner, remote])
    thread = {"thread_id": "trip"}
    answer = flow.call("a trip, please", thread)
    # the remote was sent what it had not seen: the user's input and the planner's answer
    assert answer.text == "Echo: a trip, please\nPlan: Rome in May. (turn 1)"
    texts = [m.text for m in flow.get_state(thread).values["messages"]]
    assert texts == ["a trip, please", "Plan: Rome in May.", answer.text]
    # the next turn continues the same remote conversation, sending only what is new
    again = flow.call("another", thread)
    assert again.text == "Echo: another\nPlan: Oslo in June. (turn 2)"
    # its streamed answer is the flow's streamed text; narrowed to it by its name
    streamed = "".join(flow.stream_messages("x", {"thread_id": "t2"}, agent="travel"))
    assert streamed == "Echo: x\nPlan: Paris in July. (turn 1)"


def test_a_flow_pauses_on_a_remote_question_and_resumes(remote_url: str) -> None:
    remote = RemoteA2AAgent(remote_url)
    flow = SequentialAgent(name="booking", sub_agents=[remote])
    thread = {"thread_id": "flow-booking"}
    flow.invoke("book a seat", thread)
    (pause,) = flow.get_state(thread).interrupts
    assert question(pause)["question"] == "Which city?"
    answer = flow.call(Command(resume="Lima"), thread)
    assert answer.text == f"Booked for Lima (task {question(pause)['task_id']})"


def test_as_a_supervisor_s_agent_the_history_is_sent_once_then_the_context_holds_it(
    remote_url: str,
) -> None:
    remote = RemoteA2AAgent(remote_url)
    model = ScriptedChatModel(
        [asks("find a hotel"), "Found one.", asks("cheaper", "call_2"), "Found a cheaper one."]
    )
    supervisor = SupervisorAgent(name="desk", model=model, sub_agents=[remote])
    thread = {"thread_id": "desk"}
    supervisor.call("I go to Rome", thread)
    supervisor.call("Too expensive", thread)
    results = [
        m.text
        for m in supervisor.get_state(thread).values["messages"]
        if isinstance(m, ToolResponseMessage)
    ]
    # first contact: the conversation (what the remote could not know) and the task; then
    # the remote context holds it, and only the new task is sent
    assert results == [
        "Echo: I go to Rome\nfind a hotel (turn 1)",
        "Echo: cheaper (turn 2)",
    ]


def test_a_remote_question_is_answered_by_another_instance_on_a_durable_saver(
    remote_url: str, tmp_path: Path
) -> None:
    """The pause and the remote task it waits on are in the checkpoints: another process
    (here another agent on the same SQLite file) answers it."""
    thread = {"thread_id": "durable"}
    with SqliteSaver(str(tmp_path / "threads.sqlite")) as saver:
        RemoteA2AAgent(remote_url, saver=saver).invoke("book it", thread)
    with SqliteSaver(str(tmp_path / "threads.sqlite")) as saver:
        later = RemoteA2AAgent(remote_url, saver=saver)
        (pause,) = later.get_state(thread).interrupts
        answer = later.call(Command(resume="Cusco"), thread)
    assert answer.text == f"Booked for Cusco (task {question(pause)['task_id']})"
