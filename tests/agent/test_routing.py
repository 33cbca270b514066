"""LlmRoutingAgent: a model picks the sub-agent(s) for a request, each with its query.

Each behaviour runs through the sync and the async API (``run``). The router's model and the
sub-agents' models are scripted; their ``prompts`` show what each was sent.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from graph_agent import (
    AgentRoutingError,
    AssistantMessage,
    Command,
    LlmRoutingAgent,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    SequentialAgent,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from hooks import HumanInTheLoopHook, ToolFeedback

from .conftest import Runner, tool_calls
from .flow_kit import Meeting, bot, said, scripted, seen, system_of, user, waiting_model


def route(*choices: tuple[str, str]) -> str:
    """The router model's JSON answer choosing ``(agent, query)`` pairs."""
    return json.dumps({"agents": [{"agent": a, "query": q} for a, q in choices]})


def desk(
    router: ScriptedChatModel, *, fallback: Any = None, **options: Any
) -> tuple[LlmRoutingAgent, ScriptedChatModel, ScriptedChatModel]:
    """A router over ``billing`` and ``tech``; and their models."""
    billing, billed = scripted("billing", "Refund issued.", description="Money and refunds.")
    tech, teched = scripted("tech", "Restart it.", description="Computers and devices.")
    flow = LlmRoutingAgent(
        name="desk",
        model=router,
        sub_agents=[billing, tech],
        fallback_agent=fallback,
        **options,
    )
    return flow, billed, teched


# -- one agent, several agents ----------------------------------------------------------------


def test_one_chosen_agent_answer_is_the_flow_answer_verbatim(run: Runner) -> None:
    # spring-ai-alibaba #4616: no second model call repeats the chosen agent's answer
    router = ScriptedChatModel([route(("billing", "Refund order 42."))])
    flow, billed, teched = desk(router)

    state = run.invoke(flow, "I want my money back for order 42.")

    assert said(state["messages"]) == [
        user("I want my money back for order 42."),
        bot("Refund issued."),
    ]
    assert len(router.prompts) == 1  # the router's one call, then billing's one: no other
    assert len(billed.prompts) == 1
    assert teched.prompts == []
    assert said(seen(billed)) == [
        user("I want my money back for order 42."),
        user("Refund order 42."),
    ]


def test_the_router_model_is_told_each_agent_and_the_instruction(run: Runner) -> None:
    router = ScriptedChatModel([route(("tech", "It will not boot."))])
    flow, _, _ = desk(router, instruction="Prefer tech when unsure.")

    run.call(flow, "My laptop will not boot.")

    system = system_of(router)
    assert "- billing: Money and refunds.\n- tech: Computers and devices." in system
    assert system.endswith("Prefer tech when unsure.")
    assert '"agents"' in system  # the JSON it must answer with
    assert said(seen(router)) == [user("My laptop will not boot.")]


def test_several_chosen_agents_run_at_the_same_time_and_join_in_one_message(
    run: Runner,
) -> None:
    meeting = Meeting(2)
    billing = ReactAgent(
        name="billing",
        description="Money.",
        model=waiting_model(run, "billing", "Refund issued.", meet=meeting),
    )
    tech = ReactAgent(
        name="tech",
        description="Devices.",
        model=waiting_model(run, "tech", "Restart it.", meet=meeting),
    )
    router = ScriptedChatModel([route(("billing", "Refund it."), ("tech", "Fix it."))])
    flow = LlmRoutingAgent(
        name="desk", model=router, sub_agents=[billing, tech], output_key="answers"
    )

    state = run.invoke(flow, "Refund it and fix it.")

    assert sorted(meeting.arrived) == ["billing", "tech"]
    assert said(state["messages"]) == [
        user("Refund it and fix it."),
        bot("billing:\nRefund issued.\n\ntech:\nRestart it."),
    ]
    assert state["answers"] == {"billing": "Refund issued.", "tech": "Restart it."}
    assert len(router.prompts) == 1


def test_several_answers_join_in_the_order_the_model_chose(run: Runner) -> None:
    router = ScriptedChatModel([route(("tech", "Fix it."), ("billing", "Refund it."))])
    flow, _, _ = desk(router, output_key="answers")

    state = run.invoke(flow, "Fix it, then refund it.")

    assert state["messages"][-1].text == "tech:\nRestart it.\n\nbilling:\nRefund issued."
    assert list(state["answers"]) == ["tech", "billing"]


def test_an_agent_chosen_twice_runs_once(run: Runner) -> None:
    router = ScriptedChatModel([route(("tech", "Fix it."), ("tech", "Fix it again."))])
    flow, _, teched = desk(router)

    state = run.invoke(flow, "Fix it.")

    assert len(teched.prompts) == 1
    assert said(state["messages"])[-1] == bot("Restart it.")


# -- what a routed agent sees ---------------------------------------------------------------


def test_a_routed_agent_sees_the_conversation_without_tool_traffic_and_its_query(
    run: Runner,
) -> None:
    router = ScriptedChatModel([route(("billing", "Refund order 42."))])
    flow, billed, _ = desk(router)
    history = [
        UserMessage("Where is order 42?"),
        tool_calls(("track", {"order": 42}), text="Checking."),
        ToolResponseMessage(responses=(ToolResponse(id="c1", name="track", response_data="lost"),)),
        AssistantMessage("It was lost."),
        UserMessage("Then I want my money back."),
    ]

    run.call(flow, history)

    expected = [
        user("Where is order 42?"),
        bot("It was lost."),
        user("Then I want my money back."),
    ]
    assert said(seen(router)) == expected
    assert said(seen(billed)) == [*expected, user("Refund order 42.")]


def test_a_query_that_repeats_the_request_is_not_sent_twice(run: Runner) -> None:
    router = ScriptedChatModel([route(("tech", "My screen is black."))])
    flow, _, teched = desk(router)

    run.call(flow, "My screen is black.")

    assert said(seen(teched)) == [user("My screen is black.")]


def test_the_next_turn_routes_with_the_conversation_so_far(run: Runner) -> None:
    router = ScriptedChatModel(
        [route(("billing", "Refund it.")), route(("tech", "Why is it broken?"))]
    )
    flow, _, teched = desk(router)
    config = RunnableConfig(thread_id="two-turns")

    run.call(flow, "Refund my phone.", config)
    answer = run.call(flow, "Also, why did it break?", config)

    assert answer.text == "Restart it."
    so_far = [user("Refund my phone."), bot("Refund issued."), user("Also, why did it break?")]
    assert said(seen(router, 1)) == so_far
    assert said(seen(teched)) == [*so_far, user("Why is it broken?")]


# -- answers naming no valid agent ----------------------------------------------------------

BAD_ANSWERS = {
    "unknown agent": (route(("sales", "Sell it.")), "names 'sales', which is no agent here"),
    "not JSON": ("billing, please", "not JSON"),
    "no agents": (json.dumps({"agents": []}), 'no "agents" list'),
    "not an object": (json.dumps({"agents": [42]}), "an entry is 42"),
}


@pytest.mark.parametrize("bad", list(BAD_ANSWERS))
def test_a_bad_answer_goes_back_to_the_model_with_the_valid_names(run: Runner, bad: str) -> None:
    answer, problem = BAD_ANSWERS[bad]
    router = ScriptedChatModel([answer, route(("tech", "Fix it."))])
    flow, _, teched = desk(router)

    assert run.call(flow, "Fix my phone.").text == "Restart it."

    assert len(router.prompts) == 2
    retried = router.prompts[1].messages
    assert said(retried[-2:-1]) == [bot(answer)]
    told = retried[-1].text
    assert problem in told
    assert "The agents are: billing, tech." in told
    assert len(teched.prompts) == 1


@pytest.mark.parametrize("bad", list(BAD_ANSWERS))
def test_after_two_retries_the_router_raises_agent_routing_error(run: Runner, bad: str) -> None:
    answer, problem = BAD_ANSWERS[bad]
    router = ScriptedChatModel([answer, answer, answer, route(("tech", "never asked"))])
    flow, billed, teched = desk(router)

    with pytest.raises(AgentRoutingError) as caught:
        run.call(flow, "Help.")

    assert len(router.prompts) == 3  # the first answer and two retries
    error = caught.value
    assert error.agent == "desk"
    assert error.answer == answer  # the model's last reply
    assert problem in str(error)
    assert "valid agents: billing, tech" in str(error)
    assert "fallback_agent" in str(error)
    assert billed.prompts == teched.prompts == []


def test_after_two_retries_the_fallback_agent_answers_the_conversation_as_is(
    run: Runner,
) -> None:
    helper, helped = scripted("helper", "A human will call you.")
    router = ScriptedChatModel(["?", "??", "???"])
    flow, billed, teched = desk(router, fallback=helper)

    state = run.invoke(flow, "Something odd happened.")

    assert said(state["messages"]) == [
        user("Something odd happened."),
        bot("A human will call you."),
    ]
    assert said(seen(helped)) == [user("Something odd happened.")]
    assert billed.prompts == teched.prompts == []
    assert "helper" not in system_of(router)  # not one of the agents the model chooses from


@pytest.mark.parametrize(
    "fenced",
    [
        '```json\n{"agents": [{"agent": "tech", "query": "Fix it."}]}\n```',
        '```\n{"agents": [{"agent": "tech", "query": "Fix it."}]}\n```',
        '  {"agents": [{"agent": "tech", "query": "Fix it."}]}\n',
    ],
)
def test_a_code_fenced_json_answer_is_accepted(run: Runner, fenced: str) -> None:
    router = ScriptedChatModel([fenced])
    flow, _, teched = desk(router)

    assert run.call(flow, "Fix my phone.").text == "Restart it."
    assert len(router.prompts) == 1
    assert said(seen(teched))[-1] == user("Fix it.")


# -- a flow as a routed agent -----------------------------------------------------------------


def test_a_flow_is_a_sub_agent_of_a_router(run: Runner) -> None:
    # spring-ai-alibaba #4553: a router accepts any agent, a flow too
    researcher, researched = scripted("researcher", "Owls hunt at night.")
    writer, _ = scripted("writer", "An essay: owls hunt at night.")
    team = SequentialAgent(
        name="essay_team", description="Writes essays.", sub_agents=[researcher, writer]
    )
    quick, quicked = scripted("quick", "Yes.", description="Short answers.")
    router = ScriptedChatModel([route(("essay_team", "Essay on owls."))])
    flow = LlmRoutingAgent(name="desk", model=router, sub_agents=[quick, team])

    state = run.invoke(flow, "Write about owls.")

    assert "- essay_team: Writes essays." in system_of(router)
    assert said(seen(researched)) == [user("Write about owls."), user("Essay on owls.")]
    # the team's answer (its last agent's) is the router's, once; its steps stay inside it
    assert said(state["messages"]) == [
        user("Write about owls."),
        bot("An essay: owls hunt at night."),
    ]
    assert quicked.prompts == []


def test_an_approval_in_a_routed_agent_pauses_the_router_and_resumes_in_place(
    run: Runner,
) -> None:
    sent: list[str] = []

    @tool
    def refund(order: str) -> str:
        """Refund an order."""
        sent.append(order)
        return "refunded"

    billing, billed = scripted(
        "billing",
        tool_calls(("refund", {"order": "42"})),
        "Order 42 refunded.",
        description="Money.",
        tools=[refund],
        hooks=[HumanInTheLoopHook(["refund"])],
    )
    tech, teched = scripted("tech", "Restart it.", description="Devices.")  # runs once
    router = ScriptedChatModel([route(("billing", "Refund 42."), ("tech", "Fix it."))])
    flow = LlmRoutingAgent(name="desk", model=router, sub_agents=[billing, tech])
    config = RunnableConfig(thread_id="approval")

    run.invoke(flow, "Refund 42 and fix my phone.", config)
    snapshot = flow.get_state(config)
    assert snapshot is not None
    (pending,) = snapshot.interrupts
    assert pending.namespace[0].startswith("billing:")
    assert sent == []

    answer = run.call(flow, Command(resume=ToolFeedback.approve()), config)

    assert sent == ["42"]
    assert answer.text == "billing:\nOrder 42 refunded.\n\ntech:\nRestart it."
    assert len(router.prompts) == 1  # the choice is not made again
    assert len(teched.prompts) == 1
    assert len(billed.prompts) == 2
