"""HumanInTheLoopHook in LangChain's shape: its pause is also a ``HITLRequest``
(``action_requests``, ``review_configs``), it takes ``{"decisions": [...]}`` as an answer,
and each tool's allowed decisions are kept, whichever shape the answer comes in."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import Command, ScriptedChatModel, ToolResponseMessage
from hooks import HumanInTheLoopHook, ToolFeedback, ToolFeedbackError
from hooks.builtin.human import feedback_for_request

from .test_human import PAY, Bank, agent_for, asks, pause, run, snapshot

CLOSE = ("c1", "close_account", {"reason": "moving"})


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def tool_results(model: ScriptedChatModel) -> list[Any]:
    result = model.prompts[-1].messages[-1]
    assert isinstance(result, ToolResponseMessage)
    return [r.response_data for r in result.responses]


def test_decisions_in_order_of_the_action_requests(mode: str) -> None:
    bank = Bank()
    model = ScriptedChatModel(
        [asks(PAY, ("b1", "balance", {}), CLOSE, ("p2", "send_payment", {"to": "eve"})), "Done."]
    )
    agent = agent_for(model, bank, MemorySaver(copy=True))
    pause(agent, "pay, balance, close, pay", mode)
    (pending,) = snapshot(agent).interrupts
    requests = pending.value["action_requests"]
    assert [(r["name"], r["args"]) for r in requests] == [
        ("send_payment", {"to": "bob", "amount": 250}),
        ("close_account", {"reason": "moving"}),
        ("send_payment", {"to": "eve"}),
    ]  # balance is not listed: it runs without asking
    assert [c["action_name"] for c in pending.value["review_configs"]] == [
        "send_payment",
        "close_account",
        "send_payment",
    ]
    decisions = [
        {"type": "approve"},
        {"type": "reject", "message": "keep it open"},
        {
            "type": "edit",
            "edited_action": {"name": "send_payment", "args": {"to": "eve", "amount": 2}},
        },
    ]
    assert run(agent, Command(resume={"decisions": decisions}), mode).text == "Done."
    assert sorted(bank.done, key=str) == [
        ("balance", None),
        ("send_payment", ("bob", 250.0)),
        ("send_payment", ("eve", 2.0)),
    ]
    assert tool_results(model) == [
        "sent 250.00 to bob",
        "balance: 100.00",
        "The user rejected this tool call: keep it open",
        "sent 2.00 to eve",
    ]


def test_respond_answers_for_the_tool_without_running_it(mode: str) -> None:
    bank = Bank()
    model = ScriptedChatModel([asks(CLOSE), "Understood."])
    agent = agent_for(model, bank)
    pause(agent, "close my account", mode)
    answer = {"decisions": [{"type": "respond", "message": "Ask me again next month."}]}
    assert run(agent, Command(resume=answer), mode).text == "Understood."
    assert bank.done == []
    assert tool_results(model) == ["The user rejected this tool call: Ask me again next month."]


def test_allowed_decisions_per_tool_are_shown_and_kept(mode: str) -> None:
    bank = Bank()
    model = ScriptedChatModel([asks(PAY), "Paid."])
    interrupt_on = {
        "send_payment": {"allowed_decisions": ["approve", "reject"], "description": "Money!"},
        "close_account": True,
    }
    agent = agent_for(model, bank, MemorySaver(copy=True), interrupt_on=interrupt_on)
    pause(agent, "pay bob", mode)
    (pending,) = snapshot(agent).interrupts
    assert pending.value["review_configs"] == [
        {"action_name": "send_payment", "allowed_decisions": ["approve", "reject"]}
    ]
    assert pending.value["action_requests"][0]["description"].startswith("Money!\n\nTool: ")
    edit = {"type": "edit", "edited_action": {"name": "send_payment", "args": {"amount": 1}}}
    for wrong, match in [
        (
            {"decisions": [edit]},
            r"is 'edit', which tool 'send_payment' does not allow; allowed: \['approve', 'reject'\]",
        ),
        (
            {"decisions": [{"type": "respond", "message": "no"}]},
            "is 'respond', which tool 'send_payment' does not allow",
        ),
        (
            ToolFeedback.edit({"amount": 1}),
            r"'edited' is not allowed for tool call 'p1' \(send_payment\)",
        ),
    ]:
        with pytest.raises(ToolFeedbackError, match=match):
            run(agent, Command(resume=wrong), mode)
        assert len(snapshot(agent).interrupts) == 1 and bank.done == []
    assert run(agent, Command(resume=ToolFeedback.approve()), mode).text == "Paid."
    assert bank.done == [("send_payment", ("bob", 250.0))]


EDIT = {"type": "edit", "edited_action": {"name": "send_payment", "args": {"to": "al"}}}


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        ({"decisions": {"type": "approve"}}, "'decisions' must be a list"),
        (
            {"decisions": [{"type": "approve"}]},
            r"1 decision\(s\) for 2 pending tool call\(s\) \(send_payment \(p1\), send_payment \(p2\)\)",
        ),
        (
            {"decisions": [{"type": "accept"}, EDIT]},
            r"decisions\[0\] \(for send_payment p1\) must be a dict whose 'type' is one of \['approve', 'edit', 'reject', 'respond'\]",
        ),
        ({"decisions": ["approve", EDIT]}, r"decisions\[0\] .* got 'approve'"),
        (
            {"decisions": [EDIT, {"type": "reject", "feedback": "no"}]},
            r"decisions\[1\] .* has unknown field\(s\) \['feedback'\] for a 'reject'",
        ),
        (
            {"decisions": [EDIT, {"type": "respond"}]},
            "is a 'respond' without the answer as its 'message'",
        ),
        (
            {"decisions": [EDIT, {"type": "reject", "message": 3}]},
            "has a 'message' that is not text: 3",
        ),
        (
            {"decisions": [EDIT, {"type": "edit", "edited_action": {"name": "send_payment"}}]},
            "is an 'edit' whose 'edited_action' is not",
        ),
        (
            {
                "decisions": [
                    EDIT,
                    {"type": "edit", "edited_action": {"name": "balance", "args": {}}},
                ]
            },
            r"calls another tool \('balance' instead of 'send_payment'\)",
        ),
        (
            {"decisions": [EDIT, EDIT], "why": 1},
            r"unknown field\(s\) \['why'\] next to 'decisions'",
        ),
        ({"approve": True}, "expected a ToolFeedback, got True"),
    ],
)
def test_an_answer_in_a_wrong_shape_says_the_shape_expected(
    answer: Any, match: str, mode: str
) -> None:
    bank = Bank()
    model = ScriptedChatModel(
        [asks(PAY, ("p2", "send_payment", {"to": "eve", "amount": 1})), "Done."]
    )
    agent = agent_for(model, bank)
    pause(agent, "pay twice", mode)
    with pytest.raises(ToolFeedbackError, match=match) as caught:
        run(agent, Command(resume=answer), mode)
    assert """LangChain's shape: {"decisions": [one per action request, in their order]}""" in (
        str(caught.value)
    )
    assert bank.done == [] and len(snapshot(agent).interrupts) == 1
    approve = {"decisions": [{"type": "approve"}, {"type": "approve"}]}
    assert run(agent, Command(resume=approve), mode).text == "Done."


def test_a_pause_recorded_before_review_configs_allows_approve_edit_reject() -> None:
    request = {
        "type": "tool_approval",
        "tool_calls": [{"id": "p1", "name": "pay", "arguments": {}, "description": "?"}],
    }
    (feedback,) = feedback_for_request(request, {"decisions": [{"type": "reject"}]}).values()
    assert feedback == ToolFeedback("p1", "rejected")
    with pytest.raises(ToolFeedbackError, match="is 'respond', which tool 'pay' does not allow"):
        feedback_for_request(request, {"decisions": [{"type": "respond", "message": "x"}]})


@pytest.mark.parametrize(
    ("setting", "match"),
    [
        ({"allowed_decisions": []}, "must be a non-empty list of"),
        ({"allowed_decisions": "approve"}, "must be a non-empty list of"),
        ({"allowed_decisions": ["approve", "accept"]}, r"unknown decision\(s\) \['accept'\]"),
        ({"allowed": ["approve"]}, r"unknown key\(s\) \['allowed'\]; known: allowed_decisions"),
        ({"description": 3}, "'description'] must be text"),
    ],
)
def test_a_tool_s_setting_is_checked(setting: dict[str, Any], match: str) -> None:
    with pytest.raises(TypeError, match=match):
        HumanInTheLoopHook({"pay": setting})
