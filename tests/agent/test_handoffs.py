"""Handoffs (``ReactAgent.builder().handoffs(...)``): a swarm of agents sharing one
conversation, the agent that took over kept per thread. Each behaviour through the sync and
the async API; every request any model gets is checked as a strict provider checks it
(langgraph-supervisor #81/#120, langgraph-swarm #54/#69: no unanswered tool call, ever)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from checkpoint import MemorySaver
from graph_agent import (
    AgentBuildError,
    AssistantMessage,
    Command,
    GraphUsageError,
    ReactAgent,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent.events import ModelDelta, ModelStart, RunEvent, ToolStart
from graph_agent.models import ScriptedChatModel
from hooks import HumanInTheLoopHook, ToolFeedback

from ._strict import assert_prompts_valid, assert_valid
from .conftest import Runner, tool_calls

TRANSFER_TO_BILLING = tool_calls(("transfer_to_billing", {}))


class Ticket(BaseModel):
    topic: str


class Desk:
    """A help desk swarm: ``triage`` (the entry, with a ``lookup`` tool) hands off to
    ``billing`` (``lookup`` and ``refund``) or ``faq``; both hand back to ``triage`` by name."""

    def __init__(
        self,
        triage: Sequence[Any],
        billing: Sequence[Any] = (),
        faq: Sequence[Any] = (),
        *,
        saver: Any = None,
        triage_hooks: Sequence[Any] = (),
        billing_hooks: Sequence[Any] = (),
        listeners: Sequence[Any] = (),
        billing_listeners: Sequence[Any] = (),
    ) -> None:
        self.looked_up: list[str] = []
        self.refunded: list[int] = []

        @tool
        def lookup(order: str) -> str:
            """Look an order up."""
            self.looked_up.append(order)
            return f"order {order}: paid"

        @tool
        def refund(amount: int) -> str:
            """Refund an amount."""
            self.refunded.append(amount)
            return f"refunded {amount}"

        self.triage_model = ScriptedChatModel(triage)
        self.billing_model = ScriptedChatModel(billing)
        self.faq_model = ScriptedChatModel(faq)
        self.billing = ReactAgent(
            name="billing",
            model=self.billing_model,
            tools=[lookup, refund],
            description="Answers questions about bills and refunds",
            handoffs=["triage"],
            hooks=billing_hooks,
            listeners=billing_listeners,
        )
        self.faq = ReactAgent(
            name="faq",
            model=self.faq_model,
            description="Answers general questions",
            handoffs=["triage"],
        )
        kwargs = {"saver": saver} if saver is not None else {}
        self.triage = ReactAgent(
            name="triage",
            model=self.triage_model,
            tools=[lookup],
            handoffs=[self.billing, self.faq],
            hooks=triage_hooks,
            listeners=listeners,
            **kwargs,
        )

    @property
    def models(self) -> tuple[ScriptedChatModel, ...]:
        return (self.triage_model, self.billing_model, self.faq_model)

    def messages(self, config: Any) -> list[Any]:
        snapshot = self.triage.get_state(config)
        assert snapshot is not None
        return list(snapshot.values["messages"])

    def active(self, config: Any) -> Any:
        snapshot = self.triage.get_state(config)
        assert snapshot is not None
        return snapshot.values.get("active_agent")


def events(run: Runner, runs: Any, value: Any, config: Any, **kwargs: Any) -> list[RunEvent]:
    """``runs.stream_events`` (or its async twin) collected."""
    if run.is_async:

        async def collect() -> list[RunEvent]:
            return [e async for e in runs.astream_events(value, config, **kwargs)]

        return asyncio.run(collect())
    return list(runs.stream_events(value, config, **kwargs))


def offered(prompt: Any) -> dict[str, Any]:
    return {t.tool_definition.name: t.tool_definition for t in prompt.options.tool_callbacks}


def agent_of(event: RunEvent) -> str:
    """The swarm member an event came from (the name in its first namespace part)."""
    return event.namespace[0].partition(":")[0] if event.namespace else ""


# -- the tools ---------------------------------------------------------------------------------


def test_each_agent_is_offered_a_transfer_tool_per_target(run: Runner) -> None:
    desk = Desk([TRANSFER_TO_BILLING], ["Your bill is 10."])
    run.call(desk.triage, "my bill?", {"thread_id": "t"})
    triage = offered(desk.triage_model.prompts[0])
    assert set(triage) == {"lookup", "transfer_to_billing", "transfer_to_faq"}
    assert "Answers questions about bills and refunds" in triage["transfer_to_billing"].description
    assert triage["transfer_to_billing"].schema["properties"] == {}  # no arguments
    assert set(offered(desk.billing_model.prompts[0])) == {"lookup", "refund", "transfer_to_triage"}


# -- a handoff is answered before control moves ------------------------------------------------


def test_a_handoff_is_answered_before_the_agent_that_takes_over_runs(run: Runner) -> None:
    desk = Desk([TRANSFER_TO_BILLING], ["Your bill is 10."])
    config = {"thread_id": "t"}
    assert run.call(desk.triage, "my bill?", config).text == "Your bill is 10."
    first = desk.billing_model.prompts[0].messages
    call, answer = first[-2], first[-1]
    assert isinstance(call, AssistantMessage) and call.tool_calls[0].name == "transfer_to_billing"
    assert isinstance(answer, ToolResponseMessage)
    assert answer.responses[0].id == call.tool_calls[0].id
    assert answer.responses[0].response_data == "Transferred to billing."
    assert assert_prompts_valid(*desk.models) == 2
    messages = desk.messages(config)
    assert_valid(messages)
    assert [type(m).__name__ for m in messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "AssistantMessage",
    ]


@pytest.mark.parametrize(
    "handoff_first", [False, True], ids=["tool-then-handoff", "handoff-then-tool"]
)
def test_a_tool_called_beside_a_handoff_runs_and_both_are_answered(
    run: Runner, handoff_first: bool
) -> None:
    calls = [("lookup", {"order": "42"}), ("transfer_to_billing", {})]
    desk = Desk([tool_calls(*(calls[::-1] if handoff_first else calls))], ["Order 42 is paid."])
    config = {"thread_id": "t"}
    assert run.call(desk.triage, "is 42 paid?", config).text == "Order 42 is paid."
    assert desk.looked_up == ["42"]  # it ran, though control moved in the same answer
    answers = desk.billing_model.prompts[0].messages[-1]
    assert isinstance(answers, ToolResponseMessage)
    assert {r.name: r.response_data for r in answers.responses} == {
        "lookup": "order 42: paid",
        "transfer_to_billing": "Transferred to billing.",
    }
    assert_prompts_valid(*desk.models)
    assert_valid(desk.messages(config))


def test_of_two_handoffs_in_one_answer_the_first_wins(run: Runner) -> None:
    both = tool_calls(("transfer_to_faq", {}), ("transfer_to_billing", {}))
    desk = Desk([both], billing=[], faq=["We open at nine."])
    config = {"thread_id": "t"}
    assert run.call(desk.triage, "hours? and my bill?", config).text == "We open at nine."
    assert desk.billing_model.prompts == []  # the second handoff did not run billing
    answers = desk.faq_model.prompts[0].messages[-1]
    assert isinstance(answers, ToolResponseMessage)
    by_name = {r.name: r.response_data for r in answers.responses}
    assert by_name["transfer_to_faq"] == "Transferred to faq."
    assert by_name["transfer_to_billing"].startswith("Not transferred")
    assert "faq" in by_name["transfer_to_billing"]
    assert desk.active(config) == "faq"
    assert_prompts_valid(*desk.models)
    assert_valid(desk.messages(config))


# -- who answers the next turn -----------------------------------------------------------------


def test_the_next_turn_starts_with_the_agent_that_took_over_until_it_hands_back(
    run: Runner,
) -> None:
    """openai-agents #741: slot filling across turns stays with the agent that asked."""
    desk = Desk(
        triage=[TRANSFER_TO_BILLING, "Anything else?", "Goodbye."],
        billing=["Which order?", "Order 42: refunded.", tool_calls(("transfer_to_triage", {}))],
    )
    config = {"thread_id": "t"}
    assert desk.triage.get_state(config) is None  # no thread yet
    assert run.call(desk.triage, "I want a refund", config).text == "Which order?"
    assert desk.active(config) == "billing"
    assert run.call(desk.triage, "order 42", config).text == "Order 42: refunded."
    assert len(desk.triage_model.prompts) == 1  # billing answered the slot, not triage
    assert desk.billing_model.prompts[1].messages[-1] == UserMessage("order 42")
    assert desk.active(config) == "billing"
    state = run.invoke(desk.triage, "thanks, that's all", config)
    assert state["active_agent"] == "triage"  # billing handed back
    assert state["messages"][-1].text == "Anything else?"
    assert run.call(desk.triage, "no", config).text == "Goodbye."
    assert desk.active(config) == "triage"
    assert [len(m.prompts) for m in desk.models] == [3, 3, 0]
    assert_prompts_valid(*desk.models)
    assert_valid(desk.messages(config))


def test_an_agent_that_gets_the_conversation_back_sees_its_own_earlier_tool_calls(
    run: Runner,
) -> None:
    """langgraph-swarm #111: an agent's earlier work is there when control comes back."""
    desk = Desk(
        triage=[
            tool_calls(("lookup", {"order": "42"})),
            TRANSFER_TO_BILLING,
            "As I found before: order 42 is paid.",
        ],
        billing=["I can refund it.", tool_calls(("transfer_to_triage", {}))],
    )
    config = {"thread_id": "t"}
    assert run.call(desk.triage, "order 42?", config).text == "I can refund it."
    answer = run.call(desk.triage, "no, was it paid?", config)
    assert answer.text == "As I found before: order 42 is paid."
    back = desk.triage_model.prompts[-1].messages
    own_call = next(
        m for m in back if isinstance(m, AssistantMessage) and m.tool_calls
        and m.tool_calls[0].name == "lookup"
    )  # fmt: skip
    after = back[back.index(own_call) + 1]
    assert isinstance(after, ToolResponseMessage)
    assert after.responses[0].response_data == "order 42: paid"
    texts = [m.text for m in back if isinstance(m, (UserMessage, AssistantMessage)) and m.text]
    assert "I can refund it." in texts and texts[-1] == "no, was it paid?"
    assert desk.looked_up == ["42"]  # not run again
    assert_prompts_valid(*desk.models)
    assert_valid(desk.messages(config))


# -- names -------------------------------------------------------------------------------------


def test_a_target_no_agent_of_the_swarm_has_is_named_at_the_first_run(run: Runner) -> None:
    model = ScriptedChatModel(["never"])
    billing = ReactAgent(name="billing", model=model, handoffs=["nobody"])
    triage = ReactAgent(name="triage", model=ScriptedChatModel(["never"]), handoffs=[billing])
    with pytest.raises(GraphUsageError) as caught:
        run.call(triage, "hi", {"thread_id": "t"})
    message = str(caught.value)
    assert "'billing' hands off to 'nobody'" in message
    assert "billing, triage" in message  # the agents it has
    assert model.prompts == []


def test_two_different_agents_of_one_name_in_a_swarm_are_refused(run: Runner) -> None:
    one = ReactAgent(name="billing", model=ScriptedChatModel([]))
    other = ReactAgent(name="billing", model=ScriptedChatModel([]))
    faq = ReactAgent(name="faq", model=ScriptedChatModel([]), handoffs=[other])
    triage = ReactAgent(name="triage", model=ScriptedChatModel([]), handoffs=[one, faq])
    with pytest.raises(GraphUsageError, match="two different agents are named 'billing'"):
        run.call(triage, "hi", {"thread_id": "t"})


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("triage", "cannot hand off to itself"),
        ("bad name", "must be 1-64 letters"),
        ("", "must be 1-64 letters"),
        ("x" * 65, "must be 1-64 letters"),
        ("x" * 53, "longer than the 64 characters providers accept"),
        (42, "is neither an agent nor an agent's name"),
    ],
)
def test_bad_handoffs_are_build_errors(target: Any, problem: str) -> None:
    with pytest.raises(AgentBuildError) as caught:
        ReactAgent(name="triage", model=ScriptedChatModel([]), handoffs=[target])
    assert any(problem in p for p in caught.value.problems), caught.value.problems
    with pytest.raises(AgentBuildError, match=problem.split("'")[0]):
        ReactAgent.builder().name("triage").model(ScriptedChatModel([])).handoffs(target).build()


# -- interrupts --------------------------------------------------------------------------------


def test_an_interrupt_in_the_agent_that_took_over_pauses_and_resumes_in_place(
    run: Runner, durable: Any
) -> None:
    desk = Desk(
        triage=[TRANSFER_TO_BILLING],
        billing=[tool_calls(("refund", {"amount": 5})), "Refunded 5."],
        saver=durable,
        billing_hooks=[HumanInTheLoopHook(["refund"])],
    )
    config = {"thread_id": "t"}
    run.invoke(desk.triage, "refund 5", config)
    snapshot = desk.triage.get_state(config)
    assert snapshot is not None and snapshot.next == ("billing",)
    (pause,) = snapshot.interrupts
    assert pause.value["tool_calls"][0]["name"] == "refund"
    assert pause.namespace[0].startswith("billing:")
    assert desk.refunded == [] and desk.active(config) == "billing"
    answer = run.call(desk.triage, Command(resume=ToolFeedback.approve()), config)
    assert answer.text == "Refunded 5."
    assert desk.refunded == [5]
    # resumed in place: neither triage nor billing's first model call ran again
    assert [len(m.prompts) for m in desk.models] == [1, 2, 0]
    assert desk.triage.get_state(config).interrupts == ()
    assert_prompts_valid(*desk.models)
    assert_valid(desk.messages(config))


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_a_handoff_a_person_rejects_does_not_move_the_conversation(
    run: Runner, decision: str
) -> None:
    desk = Desk(
        triage=[TRANSFER_TO_BILLING, "I will help you myself."],
        billing=["Billing here."],
        triage_hooks=[HumanInTheLoopHook(["transfer_to_billing"])],
    )
    config = {"thread_id": "t"}
    run.invoke(desk.triage, "my bill?", config)
    assert desk.triage.get_state(config).interrupts
    feedback = ToolFeedback.approve() if decision == "approve" else ToolFeedback.reject("stay")
    answer = run.call(desk.triage, Command(resume=feedback), config)
    if decision == "approve":
        assert answer.text == "Billing here."
        assert desk.active(config) == "billing"
    else:
        assert answer.text == "I will help you myself."
        assert desk.billing_model.prompts == []
        assert desk.active(config) != "billing"
        response = desk.triage_model.prompts[-1].messages[-1]
        assert isinstance(response, ToolResponseMessage)
        assert "rejected" in response.responses[0].response_data
    assert_prompts_valid(*desk.models)
    assert_valid(desk.messages(config))


# -- events ------------------------------------------------------------------------------------


def test_stream_events_show_each_members_events_with_its_namespace(run: Runner) -> None:
    desk = Desk([TRANSFER_TO_BILLING], ["Your bill is ten euros."])
    config = {"thread_id": "t"}
    seen = events(run, desk.triage, "my bill?", config)
    assert [agent_of(e) for e in seen if isinstance(e, ModelStart)] == ["triage", "billing"]
    (handoff,) = [e for e in seen if isinstance(e, ToolStart)]
    assert handoff.name == "transfer_to_billing" and agent_of(handoff) == "triage"
    deltas = [e for e in seen if isinstance(e, ModelDelta) and e.text]
    assert {agent_of(e) for e in deltas} == {"billing"}
    assert "".join(e.text for e in deltas) == "Your bill is ten euros."
    assert all(len(e.namespace) == 1 for e in seen if e.namespace)  # one level: the member

    desk = Desk([TRANSFER_TO_BILLING], ["Your bill is ten euros."])
    only = events(run, desk.triage, "my bill?", config, agent="billing")
    assert only and {agent_of(e) for e in only} == {"billing"}
    assert any(isinstance(e, ModelDelta) for e in only)
    assert not any(isinstance(e, ToolStart) for e in only)  # the handoff was triage's

    with pytest.raises(GraphUsageError, match="runs no agent named 'nobody'"):
        events(run, desk.triage, "hi", config, agent="nobody")


def test_stream_messages_of_a_swarm_is_the_answer_of_the_agent_that_answered(
    run: Runner,
) -> None:
    desk = Desk([TRANSFER_TO_BILLING], ["Your bill is ten euros."])
    text = run.stream_messages(desk.triage, "my bill?", {"thread_id": "t"})
    assert "".join(text) == "Your bill is ten euros."


def test_listeners_of_an_agent_with_handoffs_get_its_swarms_events(run: Runner) -> None:
    class Recorder:
        def __init__(self) -> None:
            self.events: list[RunEvent] = []

        def on_event(self, event: RunEvent) -> None:
            self.events.append(event)

    recorder, billing = Recorder(), Recorder()
    desk = Desk(
        [TRANSFER_TO_BILLING],
        ["Your bill is 10."],
        listeners=[recorder],
        billing_listeners=[billing],
    )
    run.call(desk.triage, "my bill?", {"thread_id": "t"})
    starts = [agent_of(e) for e in recorder.events if isinstance(e, ModelStart)]
    assert starts == ["triage", "billing"]
    assert any(e.kind == "run_end" and not e.namespace for e in recorder.events)
    # a member's own listeners get its events (it has handoffs too: its loop is a member)
    assert billing.events and {agent_of(e) for e in billing.events} == {"billing"}
    assert any(isinstance(e, ModelStart) for e in billing.events)


# -- swarms inside flows -----------------------------------------------------------------------


def _swarm(prefix: str) -> tuple[ReactAgent, ScriptedChatModel, ScriptedChatModel]:
    """``<prefix>a`` hands off to ``<prefix>b`` at once; each then answers every turn."""
    entry_model = ScriptedChatModel(
        [tool_calls((f"transfer_to_{prefix}b", {})), *(f"{prefix}a {n}" for n in range(3))]
    )
    target_model = ScriptedChatModel([f"{prefix}b {n}" for n in range(3)])
    target = ReactAgent(name=f"{prefix}b", model=target_model, description="takes over")
    entry = ReactAgent(
        name=f"{prefix}a", model=entry_model, description="hands off", handoffs=[target]
    )
    return entry, entry_model, target_model


@pytest.mark.parametrize("kind", ["parallel", "sequential"])
def test_two_swarms_in_one_flow_each_keep_their_own_active_agent(run: Runner, kind: str) -> None:
    """Neither writes the other's key (deepagents #527: two writes of one key in one step),
    nor does the next turn of one start with the agent the other handed to."""
    from graph_agent import ParallelAgent, SequentialAgent

    x, x_entry, x_target = _swarm("x")
    y, y_entry, y_target = _swarm("y")
    make = ParallelAgent if kind == "parallel" else SequentialAgent
    flow = make(name="desks", sub_agents=[x, y])
    config = {"thread_id": "t"}
    run.call(flow, "hi", config)
    assert flow.get_state(config).values["active_agents"] == {"xa": "xb", "ya": "yb"}
    run.call(flow, "again", config)
    texts = [m.text for m in flow.get_state(config).values["messages"]]
    if kind == "parallel":  # the agents that took over answered the second turn
        assert texts[-1] == "xa:\nxb 1\n\nya:\nyb 1"
    else:
        assert texts[-2:] == ["xb 1", "yb 1"]
    assert len(x_entry.prompts) == len(y_entry.prompts) == 1  # entries not asked again
    assert len(x_target.prompts) == len(y_target.prompts) == 2
    assert_prompts_valid(x_entry, x_target, y_entry, y_target)


def test_the_longest_target_name_gives_a_tool_name_providers_accept() -> None:
    name = "x" * 52
    target = ReactAgent(name=name, model=ScriptedChatModel([]))
    agent = ReactAgent(name="triage", model=ScriptedChatModel([]), handoffs=[target])
    names = [t.tool_definition.name for t in agent.tools]
    assert names == [f"transfer_to_{name}"] and len(names[0]) == 64


def test_a_swarm_under_a_router_starts_the_next_turn_with_the_agent_that_took_over(
    run: Runner,
) -> None:
    from graph_agent import LlmRoutingAgent

    x, x_entry, x_target = _swarm("x")
    choose = '{"agents": [{"agent": "xa", "query": ""}]}'
    other = ReactAgent(name="other", model=ScriptedChatModel([]), description="unused")
    flow = LlmRoutingAgent(
        name="router", model=ScriptedChatModel([choose, choose]), sub_agents=[x, other]
    )
    config = {"thread_id": "t"}
    assert run.call(flow, "hi", config).text == "xb 0"
    assert run.call(flow, "again", config).text == "xb 1"
    assert len(x_entry.prompts) == 1 and len(x_target.prompts) == 2
    assert flow.get_state(config).values["active_agents"] == {"xa": "xb"}
    assert_prompts_valid(x_entry, x_target)


def ticket_desk(triage_output: bool) -> tuple[ReactAgent, list[ScriptedChatModel]]:
    """``triage`` hands the first turn to ``billing``, whose answer is a ``Ticket``; the
    second turn billing hands back, and triage answers in text."""
    billing_model = ScriptedChatModel(
        [
            tool_calls(("final_answer_ticket", {"topic": "refund"})),
            tool_calls(("transfer_to_triage", {})),
        ]
    )
    triage_model = ScriptedChatModel([TRANSFER_TO_BILLING, "Anything else?"])
    billing = ReactAgent(
        name="billing",
        description="billing questions",
        model=billing_model,
        output_type=Ticket,
        handoffs=["triage"],
    )
    triage = ReactAgent(
        name="triage",
        description="first contact",
        model=triage_model,
        handoffs=[billing],
        output_type=Ticket if triage_output else None,
        saver=MemorySaver(),
    )
    return triage, [triage_model, billing_model]


def test_the_agent_that_answers_gives_the_swarm_its_structured_answer(run: Runner) -> None:
    """A member with an ``output_type`` that answers the turn: its validated answer is the
    swarm's ``structured_response``, and ``call_structured`` of the entry returns it."""
    triage, models = ticket_desk(triage_output=True)
    config = {"thread_id": "ticket"}
    if run.is_async:
        answer = asyncio.run(triage.acall_structured("I want a refund", config))
    else:
        answer = triage.call_structured("I want a refund", config)
    assert answer == Ticket(topic="refund")
    assert_prompts_valid(*models)


def test_a_later_turn_answered_in_text_leaves_no_structured_answer_behind(run: Runner) -> None:
    triage, models = ticket_desk(triage_output=False)
    config = {"thread_id": "ticket"}
    first = run.invoke(triage, "I want a refund", config)
    assert first["structured_response"] == Ticket(topic="refund")
    second = run.invoke(triage, "Back to you", config)  # billing hands back, triage answers
    assert second["messages"][-1].text == "Anything else?"
    assert second["structured_response"] is None  # not the first turn's
    assert_prompts_valid(*models)
