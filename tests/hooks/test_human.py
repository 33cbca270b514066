"""HumanInTheLoopHook and ToolFeedback: pause before listed tools; approve, reject or edit."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from checkpoint import MemorySaver, default_serializer
from graph_agent import (
    AssistantMessage,
    Command,
    GraphAgentError,
    GraphUsageError,
    ReactAgent,
    ScriptedChatModel,
    StateSnapshot,
    ToolCall,
    ToolResponseMessage,
    tool,
)
from hooks import HumanInTheLoopHook, ToolFeedback, ToolFeedbackError

CONFIG = {"thread_id": "t"}


def asks(*calls: tuple[str, str, dict[str, Any]]) -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=[ToolCall(id=i, name=n, arguments=json.dumps(a)) for i, n, a in calls]
    )


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["plain", "copy"])
def saver(request: pytest.FixtureRequest) -> MemorySaver:
    """A MemorySaver keeping objects, or (copy=True) serialized bytes, resume values included."""
    return MemorySaver(copy=request.param == "copy")


def run(agent: ReactAgent, value: Any, mode: str) -> AssistantMessage:
    if mode == "sync":
        return agent.call(value, CONFIG)
    return asyncio.run(agent.acall(value, CONFIG))


def pause(agent: ReactAgent, value: Any, mode: str) -> None:
    """Run until the hook pauses the thread (``call`` would refuse to return an answer)."""
    if mode == "sync":
        agent.invoke(value, CONFIG)
    else:
        asyncio.run(agent.ainvoke(value, CONFIG))
    assert snapshot(agent).interrupts


def snapshot(agent: ReactAgent) -> StateSnapshot:
    state = agent.get_state(CONFIG)
    assert state is not None
    return state


class Bank:
    """Tools that record what they did: a guarded ``send_payment`` and a free ``balance``."""

    def __init__(self) -> None:
        self.done: list[tuple[str, Any]] = []

        @tool
        def send_payment(to: str, amount: float) -> str:
            """Send money to someone."""
            self.done.append(("send_payment", (to, amount)))
            return f"sent {amount:.2f} to {to}"

        @tool
        def balance() -> str:
            """The account balance."""
            self.done.append(("balance", None))
            return "balance: 100.00"

        @tool
        def close_account(reason: str) -> str:
            """Close the account."""
            self.done.append(("close_account", reason))
            return "closed"

        self.tools = [send_payment, balance, close_account]


def agent_for(
    model: ScriptedChatModel, bank: Bank, saver: MemorySaver | None = None, **hook: Any
) -> ReactAgent:
    interrupt_on = hook.pop("interrupt_on", ["send_payment", "close_account"])
    return ReactAgent(
        name="banker",
        model=model,
        tools=bank.tools,
        hooks=[HumanInTheLoopHook(interrupt_on, **hook)],
        saver=saver,
    )


PAY = ("p1", "send_payment", {"to": "bob", "amount": 250})


def test_the_run_pauses_before_a_listed_tool(mode: str, saver: MemorySaver) -> None:
    bank = Bank()
    model = ScriptedChatModel([asks(PAY), "unused"])
    agent = agent_for(model, bank, saver)
    with pytest.raises(GraphUsageError, match="paused on thread 't' before answering"):
        run(agent, "pay bob 250", mode)  # call has no answer to give yet
    assert bank.done == []
    state = snapshot(agent)
    assert state.next == ("HumanInTheLoopHook.after_model",)
    (pending,) = state.interrupts
    description = (
        'Tool execution requires approval\n\nTool: send_payment\nArguments: {"to": "bob", '
        '"amount": 250}'
    )
    assert pending.value == {
        "type": "tool_approval",
        "tool_calls": [
            {
                "id": "p1",
                "name": "send_payment",
                "arguments": {"to": "bob", "amount": 250},
                "description": description,
            }
        ],
        # the same, as LangChain's HumanInTheLoopMiddleware asks (front ends read this)
        "action_requests": [
            {
                "name": "send_payment",
                "args": {"to": "bob", "amount": 250},
                "description": description,
            }
        ],
        "review_configs": [
            {
                "action_name": "send_payment",
                "allowed_decisions": ["approve", "edit", "reject", "respond"],
            }
        ],
    }
    json.dumps(pending.value)  # JSON-friendly


def test_approved_calls_run_as_asked(mode: str, saver: MemorySaver) -> None:
    bank = Bank()
    model = ScriptedChatModel([asks(PAY), "Paid."])
    agent = agent_for(model, bank, saver)
    pause(agent, "pay bob 250", mode)
    reply = run(agent, Command(resume=ToolFeedback.approve()), mode)
    assert reply.text == "Paid."
    assert bank.done == [("send_payment", ("bob", 250.0))]
    result = model.prompts[-1].messages[-1]
    assert isinstance(result, ToolResponseMessage)
    assert result.responses[0].response_data == "sent 250.00 to bob"
    assert snapshot(agent).interrupts == ()


def test_rejected_calls_do_not_run_and_the_model_gets_the_reason(
    mode: str, saver: MemorySaver
) -> None:
    bank = Bank()
    model = ScriptedChatModel([asks(PAY), "OK, I did not pay."])
    agent = agent_for(model, bank, saver)
    pause(agent, "pay bob 250", mode)
    reply = run(agent, Command(resume=ToolFeedback("p1", "rejected", reason="too much")), mode)
    assert reply.text == "OK, I did not pay."
    assert bank.done == []
    result = model.prompts[-1].messages[-1]
    assert isinstance(result, ToolResponseMessage)
    assert result.responses[0].response_data == "The user rejected this tool call: too much"
    assert snapshot(agent).values.get("rejected_tool_calls") is None  # cleared by the tool node


def test_edited_arguments_are_the_ones_executed(mode: str, saver: MemorySaver) -> None:
    bank = Bank()
    model = ScriptedChatModel([asks(PAY), "Paid 25."])
    agent = agent_for(model, bank, saver)
    pause(agent, "pay bob 250", mode)
    reply = run(agent, Command(resume=ToolFeedback.edit({"to": "bob", "amount": 25})), mode)
    assert reply.text == "Paid 25."
    assert bank.done == [("send_payment", ("bob", 25.0))]
    messages = snapshot(agent).values["messages"]
    assert [type(m).__name__ for m in messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResponseMessage",
        "AssistantMessage",
    ]
    edited = messages[1]
    assert json.loads(edited.tool_calls[0].arguments) == {"to": "bob", "amount": 25}
    assert edited.metadata["edited_tool_calls"] == {"p1": json.dumps(PAY[2])}
    assert messages[2].responses[0].response_data == "sent 25.00 to bob"
    assert model.prompts[-1].messages[1] == edited  # the model sees the edited call


def test_mixed_decisions_and_unlisted_tools(mode: str, saver: MemorySaver) -> None:
    bank = Bank()
    model = ScriptedChatModel(
        [
            asks(PAY, ("c1", "close_account", {"reason": "moving"}), ("b1", "balance", {})),
            "Done.",
        ]
    )
    agent = agent_for(model, bank, saver)
    pause(agent, "pay, close, balance", mode)
    (pending,) = snapshot(agent).interrupts
    assert [c["id"] for c in pending.value["tool_calls"]] == ["p1", "c1"]  # not balance
    feedback = {"p1": ToolFeedback.approve(), "c1": ToolFeedback.reject("keep it open")}
    assert run(agent, Command(resume=feedback), mode).text == "Done."
    assert sorted(bank.done, key=str) == [("balance", None), ("send_payment", ("bob", 250.0))]
    result = model.prompts[-1].messages[-1]
    assert isinstance(result, ToolResponseMessage)
    assert [r.response_data for r in result.responses] == [
        "sent 250.00 to bob",
        "The user rejected this tool call: keep it open",
        "balance: 100.00",
    ]


def test_a_list_of_feedback_with_ids(mode: str) -> None:
    bank = Bank()
    model = ScriptedChatModel(
        [asks(PAY, ("p2", "send_payment", {"to": "eve", "amount": 1})), "Done."]
    )
    agent = agent_for(model, bank)
    pause(agent, "pay twice", mode)
    feedback = [
        ToolFeedback.edit('{"to": "carol", "amount": 3}', "p2"),
        ToolFeedback.reject(None, "p1"),
    ]
    run(agent, Command(resume=feedback), mode)
    assert bank.done == [("send_payment", ("carol", 3.0))]
    result = model.prompts[-1].messages[-1]
    assert isinstance(result, ToolResponseMessage)
    assert result.responses[0].response_data == "The user rejected this tool call: no reason given"


def test_tools_not_listed_run_without_asking(mode: str) -> None:
    bank = Bank()
    model = ScriptedChatModel([asks(("b1", "balance", {})), "You have 100."])
    agent = agent_for(model, bank)
    assert run(agent, "balance?", mode).text == "You have 100."
    assert bank.done == [("balance", None)]


def test_interrupt_on_as_a_mapping(mode: str) -> None:
    bank = Bank()
    model = ScriptedChatModel([asks(PAY, ("c1", "close_account", {"reason": "x"})), "ok"])
    agent = agent_for(
        model,
        bank,
        interrupt_on={
            "send_payment": "Payments need a second pair of eyes",
            "close_account": False,
        },
    )
    pause(agent, "go", mode)
    (pending,) = snapshot(agent).interrupts
    (only,) = pending.value["tool_calls"]
    assert only["name"] == "send_payment"
    assert only["description"].startswith(
        "Payments need a second pair of eyes\n\nTool: send_payment"
    )
    run(agent, Command(resume={"decision": "approved"}), mode)  # a plain dict works too
    assert sorted(bank.done, key=str) == [("close_account", "x"), ("send_payment", ("bob", 250.0))]


@pytest.mark.parametrize(
    ("feedback", "match"),
    [
        ([ToolFeedback.approve("p1")], r"no feedback for pending tool call\(s\) \['p2'\]"),
        (ToolFeedback.approve(), "2 tool calls are pending"),
        (
            {"p1": ToolFeedback.approve(), "zz": ToolFeedback.approve()},
            "'zz', which is not pending",
        ),
        (
            [ToolFeedback.approve("p1"), ToolFeedback.approve("p1")],
            "two feedbacks for tool call 'p1'",
        ),
        ({"p1": ToolFeedback.approve("p2")}, "under key 'p1' is for tool call 'p2'"),
        ("yes", "cannot use 'yes' as tool feedback"),
        ([{"decision": "maybe", "tool_call_id": "p1"}], "decision must be one of"),
    ],
)
def test_bad_feedback_raises_and_the_thread_stays_paused(
    feedback: Any, match: str, mode: str
) -> None:
    bank = Bank()
    model = ScriptedChatModel(
        [asks(PAY, ("p2", "send_payment", {"to": "eve", "amount": 1})), "Done."]
    )
    agent = agent_for(model, bank, MemorySaver(copy=True))
    pause(agent, "pay twice", mode)
    with pytest.raises(ToolFeedbackError, match=match) as caught:
        run(agent, Command(resume=feedback), mode)
    assert isinstance(caught.value, GraphAgentError) and isinstance(caught.value, ValueError)
    assert bank.done == []
    assert len(snapshot(agent).interrupts) == 1
    good = {"p1": ToolFeedback.approve(), "p2": ToolFeedback.approve()}
    assert run(agent, Command(resume=good), mode).text == "Done."
    assert len(bank.done) == 2


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("p1", "edited"), "needs the new arguments"),
        (("p1", "approved", None, {"a": 1}), "only for decision='edited'"),
        (("p1", "edited", None, "[1, 2]"), "must be a JSON object"),
        (("p1", "edited", None, "{nope"), "are not JSON"),
        (("p1", "maybe"), "decision must be one of"),
        ((3, "approved"), "tool_call_id must be a str or None"),
        (("p1", "rejected", 5), "reason must be a str or None"),
    ],
)
def test_malformed_feedback_is_refused_when_made(args: tuple[Any, ...], match: str) -> None:
    with pytest.raises(ToolFeedbackError, match=match):
        ToolFeedback(*args)


def test_tool_feedback_is_checkpointable() -> None:
    for feedback in (
        ToolFeedback.approve("p1"),
        ToolFeedback.reject("no", "p1"),
        ToolFeedback.edit({"to": "bob", "nested": {"a": [1, 2]}}),
    ):
        assert default_serializer.loads(default_serializer.dumps(feedback)) == feedback
    assert ToolFeedback.edit({"a": 1}).arguments_json() == '{"a": 1}'
    assert ToolFeedback.approve().arguments_json() is None


def test_interrupt_on_is_checked() -> None:
    assert HumanInTheLoopHook("send_payment").tool_names == ("send_payment",)
    assert HumanInTheLoopHook({"a": True, "b": False, "c": "why"}).tool_names == ("a", "c")
    with pytest.raises(TypeError, match="must be True, False, a description or"):
        HumanInTheLoopHook({"a": 1})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="tool names must be strings"):
        HumanInTheLoopHook([3])  # type: ignore[list-item]


def test_a_second_pause_in_the_same_run(mode: str) -> None:
    bank = Bank()
    model = ScriptedChatModel(
        [asks(PAY), asks(("p2", "send_payment", {"to": "eve", "amount": 5})), "Both handled."]
    )
    agent = agent_for(model, bank, MemorySaver(copy=True))
    pause(agent, "pay bob then eve", mode)
    pause(agent, Command(resume=ToolFeedback.approve()), mode)
    (pending,) = snapshot(agent).interrupts
    assert pending.value["tool_calls"][0]["id"] == "p2"
    assert run(agent, Command(resume=ToolFeedback.reject("enough")), mode).text == "Both handled."
    assert bank.done == [("send_payment", ("bob", 250.0))]
