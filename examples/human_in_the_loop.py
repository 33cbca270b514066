"""A payments assistant whose ``send_payment`` tool waits for a person's approval.

``HumanInTheLoopHook(["send_payment"])`` pauses the agent after the model asks for a payment
and before the tool runs; the thread is checkpointed in a ``MemorySaver`` and waits. The script
shows the pending call, then resumes three threads with the three possible decisions:

- approve: the payment is sent as the model asked;
- reject:  nothing is sent, the model gets the reason as the tool's result and tells the user;
- edit:    the person changes the amount, and the edited arguments are the ones executed.

    python examples/human_in_the_loop.py [--live]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from _models import choose, parse_args, served

from checkpoint import MemorySaver
from graph_agent import (
    AssistantMessage,
    Command,
    FunctionChatModel,
    Prompt,
    ReactAgent,
    RunnableConfig,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from hooks import HumanInTheLoopHook, ToolFeedback

LEDGER: list[str] = []  # the payments that really went out


@tool
def send_payment(to: str, amount: float, currency: str = "EUR") -> str:
    """Send money from the user's account to a person."""
    LEDGER.append(f"{amount:.2f} {currency} to {to}")
    return f"sent {amount:.2f} {currency} to {to}"


@tool
def get_balance() -> str:
    """The user's account balance (read-only: no approval needed)."""
    return "balance: 1520.00 EUR"


def offline_reply(prompt: Prompt) -> AssistantMessage | str:
    """A deterministic stand-in for an LLM: asks for the payment the user wants, then reports
    what the tool said (or that the payment was rejected)."""
    last = prompt.messages[-1]
    if isinstance(last, UserMessage):
        turn = sum(isinstance(m, UserMessage) for m in prompt.messages)
        arguments = json.dumps({"to": "Alice", "amount": 120.0, "currency": "EUR"})
        call = ToolCall(id=f"call_{turn}", name="send_payment", arguments=arguments)
        return AssistantMessage("I'll send that payment.", tool_calls=[call])
    assert isinstance(last, ToolResponseMessage)
    result = last.responses[0].response_data
    if result.startswith("The user rejected this tool call: "):
        reason = result.removeprefix("The user rejected this tool call: ")
        return f"I did not send the payment; you declined it ({reason})."
    return f"Done: {result}."


def build_agent(model: Any) -> ReactAgent:
    return (
        ReactAgent.builder()
        .name("payments")
        .model(model)
        .system_prompt("You help the user with payments. Use send_payment to pay someone.")
        .tools(send_payment, get_balance)
        .hooks(HumanInTheLoopHook({"send_payment": "A payment needs your approval"}))
        .saver(MemorySaver())
        .build()
    )


def pending_calls(agent: ReactAgent, config: RunnableConfig) -> list[dict[str, Any]]:
    """The calls waiting for a decision, as the hook described them (empty: not paused)."""
    state = agent.get_state(config)
    if state is None:
        return []
    return [call for i in state.interrupts for call in i.value.get("tool_calls", [])]


def decide(kind: str, call: dict[str, Any]) -> ToolFeedback:
    if kind == "approve":
        return ToolFeedback.approve(call["id"])
    if kind == "reject":
        return ToolFeedback.reject("I already paid Alice in cash", call["id"])
    edited = {**call["arguments"], "amount": 100.0}
    return ToolFeedback.edit(edited, call["id"])


def run_thread(agent: ReactAgent, kind: str) -> None:
    config = RunnableConfig(thread_id=f"hitl-{kind}")
    request = "Please send Alice 120 EUR for the concert tickets."
    print(f"\n== thread {config.thread_id!r}: {request}")
    state = agent.invoke(request, config)
    calls = pending_calls(agent, config)
    if not calls:
        print("  the model answered without asking to pay:", state["messages"][-1].text)
        return
    for call in calls:
        print(f"  paused before {call['name']}({json.dumps(call['arguments'])})  [id {call['id']}]")
        print("  " + call["description"].splitlines()[0])
    feedback = {call["id"]: decide(kind, call) for call in calls}
    for call_id, item in feedback.items():
        detail = {
            "approved": "",
            "rejected": f" (reason: {item.reason})",
            "edited": f" -> {item.arguments_json()}",
        }[item.decision]
        print(f"  decision for {call_id}: {item.decision}{detail}")
    before = len(LEDGER)
    reply = agent.call(Command(resume=feedback), config)
    executed = LEDGER[before:]
    print(f"  executed: {', '.join(executed) if executed else 'nothing'}")
    print(f"  assistant: {reply.text}")


# served: `graph-agent serve examples/human_in_the_loop.py:agent` (its model: see _models.py)
agent = build_agent(served(lambda: FunctionChatModel(offline_reply)))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("Approve, reject or edit an agent's payment before it is sent.", argv)
    agent = build_agent(choose(args, FunctionChatModel(offline_reply)))
    for kind in ("approve", "reject", "edit"):
        run_thread(agent, kind)
    print(f"\nledger: {LEDGER}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
