"""SupervisorAgent: a model that delegates to its sub-agents (each one of its tools) until it
answers the user.

Each behaviour runs through the sync and the async API (``run``). What each model was sent
(``model.prompts``) shows what the supervisor and each sub-agent saw.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from graph_agent import (
    AgentMaxIterationsError,
    Command,
    ModelError,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    SequentialAgent,
    SupervisorAgent,
    ToolResponseMessage,
    tool,
)
from hooks import HumanInTheLoopHook, ToolFeedback

from .conftest import Runner, tool_calls
from .flow_kit import (
    Meeting,
    bot,
    said,
    scripted,
    seen,
    system_of,
    unanswered,
    user,
    waiting_model,
)


def team(
    boss: ScriptedChatModel, **options: Any
) -> tuple[SupervisorAgent, ScriptedChatModel, ScriptedChatModel]:
    """A supervisor over ``researcher`` and ``writer``; and their models."""
    researcher, researched = scripted(
        "researcher", "Owls hunt at night.", "Bats use echolocation.", description="Finds facts."
    )
    writer, wrote = scripted(
        "writer",
        "Owls: silent night hunters.",
        "Bats: they hear in the dark.",
        description="Writes.",
    )
    flow = SupervisorAgent(name="editor", model=boss, sub_agents=[researcher, writer], **options)
    return flow, researched, wrote


def responses(message: Any) -> dict[str, str]:
    assert isinstance(message, ToolResponseMessage)
    return {r.id: r.response_data for r in message.responses}


def test_a_delegation_is_answered_by_the_sub_agent_answer(run: Runner) -> None:
    boss = ScriptedChatModel(
        [
            tool_calls(("researcher", {"input": "Facts about owls."})),
            "Owls hunt at night, says my researcher.",
        ]
    )
    flow, researched, wrote = team(boss)

    state = run.invoke(flow, "Tell me about owls.")

    messages = state["messages"]
    assert responses(messages[2]) == {"c1": "Owls hunt at night."}
    assert said(messages)[-1] == bot("Owls hunt at night, says my researcher.")  # its own
    # the researcher sees the conversation (without tool traffic), then its task
    assert said(seen(researched)) == [user("Tell me about owls."), user("Facts about owls.")]
    assert wrote.prompts == []
    # the supervisor's second call sees the delegation and its answer
    assert said(seen(boss, 1))[-1] == ("tool", "Owls hunt at night.")


def test_the_supervisor_is_told_its_agents_and_offered_each_as_a_tool(run: Runner) -> None:
    boss = ScriptedChatModel(["Nothing to delegate."])
    flow, _, _ = team(boss, instruction="Always cite the researcher.")

    assert run.call(flow, "Hi.").text == "Nothing to delegate."

    system = system_of(boss)
    assert "- researcher: Finds facts.\n- writer: Writes." in system
    assert system.endswith("Always cite the researcher.")
    options = boss.prompts[0].tool_options
    assert options is not None
    offered = {c.tool_definition.name: c.tool_definition for c in options.tool_callbacks}
    assert sorted(offered) == ["researcher", "writer"]
    assert offered["writer"].description == "Writes."
    schema = json.loads(offered["writer"].input_schema)
    assert schema["properties"] == {
        "input": {"type": "string", "description": "The request for the agent."}
    }
    assert isinstance(flow.supervisor, ReactAgent)


def test_two_delegations_in_one_answer_run_at_the_same_time(run: Runner) -> None:
    # langgraph-supervisor #222/#230: parallel delegations must really run in parallel
    meeting = Meeting(2)
    researcher = ReactAgent(
        name="researcher",
        description="Finds facts.",
        model=waiting_model(run, "researcher", "Owl facts.", meet=meeting),
    )
    writer = ReactAgent(
        name="writer",
        description="Writes.",
        model=waiting_model(run, "writer", "A bat poem.", meet=meeting),
    )
    boss = ScriptedChatModel(
        [
            tool_calls(("researcher", {"input": "Owls."}), ("writer", {"input": "Bat poem."})),
            "Here are owl facts and a bat poem.",
        ]
    )
    flow = SupervisorAgent(name="editor", model=boss, sub_agents=[researcher, writer])

    state = run.invoke(flow, "Owl facts and a bat poem, please.")

    assert sorted(meeting.arrived) == ["researcher", "writer"]
    assert responses(state["messages"][2]) == {"c1": "Owl facts.", "c2": "A bat poem."}
    assert state["messages"][-1].text == "Here are owl facts and a bat poem."


def test_the_supervisor_delegates_in_turn_until_it_answers(run: Runner) -> None:
    boss = ScriptedChatModel(
        [
            tool_calls(("researcher", {"input": "Owl facts."})),
            tool_calls(("writer", {"input": "Write up: owls hunt at night."})),
            "Done: Owls: silent night hunters.",
        ]
    )
    flow, researched, wrote = team(boss, output_key="article")

    state = run.invoke(flow, "An article on owls.")

    assert said(state["messages"]) == [
        user("An article on owls."),
        bot(""),  # the delegation to the researcher
        ("tool", "Owls hunt at night."),
        bot(""),  # to the writer
        ("tool", "Owls: silent night hunters."),
        bot("Done: Owls: silent night hunters."),
    ]
    assert len(boss.prompts) == 3
    assert said(seen(wrote)) == [
        user("An article on owls."),
        user("Write up: owls hunt at night."),
    ]
    assert len(researched.prompts) == 1
    assert state["article"] == "Done: Owls: silent night hunters."
    assert unanswered(state["messages"]) == []


def test_max_iterations_stops_the_supervisor_with_every_delegation_answered(
    run: Runner,
) -> None:
    boss = ScriptedChatModel([tool_calls(("researcher", {"input": f"Try {i}."})) for i in range(5)])
    flow, researched, _ = team(boss, max_iterations=2)
    config = RunnableConfig(thread_id="stuck")

    with pytest.raises(AgentMaxIterationsError, match="max_iterations=2"):
        run.call(flow, "Research forever.", config)

    assert len(boss.prompts) == 2
    assert len(researched.prompts) == 2
    snapshot = flow.get_state(config)
    assert snapshot is not None
    assert unanswered(snapshot.values["messages"]) == []


def test_a_failed_or_unknown_delegation_is_answered_and_the_supervisor_goes_on(
    run: Runner,
) -> None:
    # langgraph-supervisor #81/#120/#122: never a tool call without its response
    researcher, _ = scripted("researcher", ModelError("provider down"), description="Facts.")
    writer, _ = scripted("writer", "A poem.", description="Writes.")
    boss = ScriptedChatModel(
        [
            tool_calls(
                ("researcher", {"input": "Facts."}),
                ("writer", {"input": "A poem."}),
                ("critic", {"input": "Judge."}),
            ),
            "I could only get a poem: A poem.",
        ]
    )
    flow = SupervisorAgent(name="editor", model=boss, sub_agents=[researcher, writer])

    answer = run.call(flow, "Facts, a poem and a review.")

    assert answer.text == "I could only get a poem: A poem."
    got = responses(seen(boss, 1)[-1])
    assert set(got) == {"c1", "c2", "c3"}
    assert "provider down" in got["c1"]
    assert got["c2"] == "A poem."
    assert "no tool named 'critic'" in got["c3"]
    for prompt in boss.prompts:
        assert unanswered(prompt.messages) == []


def test_the_next_turn_continues_the_supervisor_thread(run: Runner) -> None:
    boss = ScriptedChatModel(
        [
            tool_calls(("researcher", {"input": "Owl facts."})),
            "Owls hunt at night.",
            tool_calls(("researcher", {"input": "Bat facts."})),
            "Bats use echolocation.",
        ]
    )
    flow, researched, _ = team(boss)
    config = RunnableConfig(thread_id="two-turns")

    run.call(flow, "Owls?", config)
    assert run.call(flow, "And bats?", config).text == "Bats use echolocation."

    # the supervisor sees its whole thread; a sub-agent the conversation without tool traffic
    assert len(seen(boss, 2)) == 5
    assert unanswered(seen(boss, 2)) == []
    assert said(seen(researched, 1)) == [
        user("Owls?"),
        bot("Owls hunt at night."),
        user("And bats?"),
        user("Bat facts."),
    ]


def test_an_approval_inside_a_delegated_agent_pauses_the_supervisor_and_resumes_in_place(
    run: Runner,
) -> None:
    sent: list[str] = []

    @tool
    def transfer(to: str, amount: int) -> str:
        """Send money."""
        sent.append(f"{amount} to {to}")
        return "sent"

    banker, banked = scripted(
        "banker",
        tool_calls(("transfer", {"to": "Bob", "amount": 5})),
        "Paid Bob 5.",
        description="Moves money.",
        tools=[transfer],
        hooks=[HumanInTheLoopHook(["transfer"])],
    )
    clerk, clerked = scripted("clerk", "Filed.", description="Files papers.")  # runs once
    boss = ScriptedChatModel(
        [
            tool_calls(("banker", {"input": "Pay Bob 5."}), ("clerk", {"input": "File it."})),
            "Bob is paid and it is filed.",
        ]
    )
    flow = SupervisorAgent(name="office", model=boss, sub_agents=[banker, clerk])
    config = RunnableConfig(thread_id="approval")

    run.invoke(flow, "Pay Bob 5 and file it.", config)

    assert sent == []
    snapshot = flow.get_state(config)
    assert snapshot is not None
    (pending,) = snapshot.interrupts
    assert pending.value["tool_calls"][0]["name"] == "transfer"
    assert any(part.startswith("banker:") for part in pending.namespace)

    answer = run.call(flow, Command(resume=ToolFeedback.approve()), config)

    assert answer.text == "Bob is paid and it is filed."
    assert sent == ["5 to Bob"]
    assert len(clerked.prompts) == 1  # the finished sibling is not run again
    assert len(banked.prompts) == 2
    assert len(boss.prompts) == 2
    assert responses(seen(boss, 1)[-1]) == {"c1": "Paid Bob 5.", "c2": "Filed."}


def test_a_flow_is_a_sub_agent_of_a_supervisor(run: Runner) -> None:
    researcher, _ = scripted("researcher", "Owls hunt at night.")
    writer, wrote = scripted("writer", "Owls: silent night hunters.")
    essay = SequentialAgent(
        name="essay_team", description="Writes essays.", sub_agents=[researcher, writer]
    )
    boss = ScriptedChatModel(
        [tool_calls(("essay_team", {"input": "An owl essay."})), "Here it is."]
    )
    flow = SupervisorAgent(name="editor", model=boss, sub_agents=[essay])

    state = run.invoke(flow, "Owls, please.")

    # the flow's answer (its last agent's) answers the delegation
    assert responses(state["messages"][2]) == {"c1": "Owls: silent night hunters."}
    assert said(seen(wrote)) == [
        user("Owls, please."),
        user("An owl essay."),
        bot("Owls hunt at night."),
    ]


def test_a_supervisor_is_a_step_of_a_sequential_flow(run: Runner) -> None:
    boss = ScriptedChatModel(
        [tool_calls(("researcher", {"input": "Owl facts."})), "Owls hunt at night."]
    )
    flow, _, _ = team(boss)
    publisher, published = scripted("publisher", "Published.")
    pipeline = SequentialAgent(name="pipeline", sub_agents=[flow, publisher])

    state = run.invoke(pipeline, "Owls?")

    # the supervisor hands on its answer only: its delegations stay in its own checkpoints
    assert said(state["messages"]) == [user("Owls?"), bot("Owls hunt at night."), bot("Published.")]
    assert said(seen(published)) == [user("Owls?"), bot("Owls hunt at night.")]
