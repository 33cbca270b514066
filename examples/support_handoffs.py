"""A support desk whose agents hand the conversation to each other (``.handoffs(...)``).

``triage`` greets the customer and hands the conversation to ``billing`` or ``tech`` (its
tools ``transfer_to_billing`` and ``transfer_to_tech``); each of them hands it back with
``transfer_to_triage`` when the request is not theirs, or when they are done. The agents
share one conversation on one thread, and the agent that took over is remembered with the
thread (``state["active_agent"]``): the customer's next message goes straight to it, not to
triage again. Four turns:

1. a double charge: triage hands over to billing, which looks the charges up and refunds one;
2. a follow-up question: billing answers at once (it still has the conversation);
3. a Wi-Fi problem: billing hands back to triage, which hands over to tech;
4. "it works now": tech hands back to triage, which closes.

Each turn prints the agent it starts with, every handoff and tool call as it happens (from
``stream_events``: each event's namespace names the agent it comes from), the answer and who
gave it, and the agent the next turn will start with. Offline, each agent's model is a small
rule-based function, so the output is the same on every run.

    python examples/support_handoffs.py [--live]
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from _models import choose, configured, parse_args

from graph_agent import (
    AssistantMessage,
    Prompt,
    ReactAgent,
    RunnableConfig,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent.events import ModelEnd, ToolEnd, ToolStart
from graph_agent.models import ChatModel, FunctionChatModel

CHARGES = {"May": ["C-1: 42.00 EUR on May 3", "C-2: 42.00 EUR on May 3"]}
REFUNDS: list[str] = []


@tool
def list_charges(month: str) -> str:
    """The charges on the customer's card in a month (e.g. "May")."""
    return "; ".join(CHARGES.get(month, [])) or f"no charges in {month}"


@tool
def refund(charge_id: str) -> str:
    """Refund one charge (e.g. "C-2")."""
    REFUNDS.append(charge_id)
    return f"refund R-{len(REFUNDS)} issued for {charge_id}"


@tool
def check_line(service: str) -> str:
    """Check the customer's line and equipment for a service (e.g. "wifi")."""
    return "line OK; router firmware 1.2 is outdated (current: 2.0)"


@tool
def update_router() -> str:
    """Push the current firmware to the customer's router."""
    return "router updated to firmware 2.0; it restarts in a minute"


# -- offline stand-ins for the LLMs: each reads the latest user message and tool results -------

BILLING = re.compile(r"charg|refund|invoice|bill", re.IGNORECASE)
TECH = re.compile(r"wi-?fi|router|internet|slow", re.IGNORECASE)
THANKS = re.compile(r"thank|works now", re.IGNORECASE)


def call(prompt: Prompt, name: str, **arguments: str) -> AssistantMessage:
    """An answer asking for one tool (its id unique in the conversation)."""
    call_id = f"call_{len(prompt.messages)}"
    return AssistantMessage(
        "", tool_calls=[ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))]
    )


def latest_user_text(prompt: Prompt) -> str:
    return next(m.text for m in reversed(prompt.messages) if isinstance(m, UserMessage))


def tool_results(prompt: Prompt) -> dict[str, str]:
    """The results of this turn's tool calls, by tool name."""
    results: dict[str, str] = {}
    for message in reversed(prompt.messages):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, ToolResponseMessage):
            for response in message.responses:
                results.setdefault(response.name, response.response_data)
    return results


def triage_reply(prompt: Prompt) -> AssistantMessage | str:
    text = latest_user_text(prompt)
    if BILLING.search(text):
        return call(prompt, "transfer_to_billing")
    if TECH.search(text):
        return call(prompt, "transfer_to_tech")
    return "Glad it's sorted! Anything else I can help you with?"


def billing_reply(prompt: Prompt) -> AssistantMessage | str:
    text, done = latest_user_text(prompt), tool_results(prompt)
    if not BILLING.search(text):
        return call(prompt, "transfer_to_triage")  # not a billing question: back to the front desk
    if "refund" in done:
        return f"You were charged twice on May 3; I refunded C-2 ({done['refund'].split()[1]})."
    if "list_charges" in done:
        return call(prompt, "refund", charge_id="C-2")
    if "twice" in text:
        return call(prompt, "list_charges", month="May")
    return "Refunds reach your card within 3 to 5 business days."


def tech_reply(prompt: Prompt) -> AssistantMessage | str:
    text, done = latest_user_text(prompt), tool_results(prompt)
    if THANKS.search(text):
        return call(prompt, "transfer_to_triage")  # solved: back to the front desk
    if "update_router" in done:
        return "Your line is fine; your router's firmware was outdated, so I updated it."
    if "check_line" in done:
        return call(prompt, "update_router")
    return call(prompt, "check_line", service="wifi")


# -- the desk ---------------------------------------------------------------------------------


def build(model: ChatModel | None = None) -> ReactAgent:
    """The desk: ``triage`` is the entry agent; ``model`` (``--live``) replaces every offline
    model."""
    billing = (
        ReactAgent.builder()
        .name("billing")
        .description("Charges, refunds and invoices.")
        .model(model or FunctionChatModel(billing_reply))
        .system_prompt(
            "You are the billing desk. Answer questions about charges, refunds and invoices "
            "with your tools. When the customer asks about anything else, call "
            "transfer_to_triage without answering."
        )
        .tools(list_charges, refund)
        .handoffs("triage")
        .build()
    )
    tech = (
        ReactAgent.builder()
        .name("tech")
        .description("Internet, Wi-Fi and router problems.")
        .model(model or FunctionChatModel(tech_reply))
        .system_prompt(
            "You are technical support. Fix internet, Wi-Fi and router problems with your "
            "tools. When the problem is solved or the question is not technical, call "
            "transfer_to_triage without answering."
        )
        .tools(check_line, update_router)
        .handoffs("triage")
        .build()
    )
    return (
        ReactAgent.builder()
        .name("triage")
        .description("The front desk.")
        .model(model or FunctionChatModel(triage_reply))
        .system_prompt(
            "You are the front desk of an internet provider. Hand billing questions to "
            "billing and technical problems to tech; otherwise answer briefly yourself."
        )
        .handoffs(billing, tech)
        .build()
    )


TURNS = [
    "Hi, I was charged twice for May.",
    "Thanks! When will the refund arrive?",
    "Also, my Wi-Fi keeps dropping.",
    "It works now, thank you!",
]


def agent_of(namespace: tuple[str, ...]) -> str:
    """The swarm member an event comes from: its namespace's first part, '<name>:<id>'."""
    return namespace[0].split(":", 1)[0] if namespace else "desk"


def answers(message: AssistantMessage | None) -> bool:
    """Whether a model's message answers the customer (text, no tool call)."""
    return message is not None and bool(message.text) and not message.tool_calls


# served: `graph-agent serve examples/support_handoffs.py:desk` (its model: see _models.py)
desk = build(configured())


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("A support desk whose agents hand the conversation to each other.", argv)
    live = choose(args, FunctionChatModel(triage_reply)) if args.live else None
    desk = build(live)
    config = RunnableConfig(thread_id="customer-42")
    for n, text in enumerate(TURNS, start=1):
        snapshot = desk.get_state(config)
        starts = (snapshot.values.get("active_agent") if snapshot else None) or desk.name
        print(f"== turn {n}: starts with {starts}")
        print(f"customer: {text}")
        for event in desk.stream_events(text, config):
            who = agent_of(event.namespace)
            if isinstance(event, ToolStart) and event.name.startswith("transfer_to_"):
                print(
                    f"  [{who}] hands the conversation to {event.name.removeprefix('transfer_to_')}"
                )
            elif isinstance(event, ToolEnd) and not event.name.startswith("transfer_to_"):
                print(f"  [{who}] {event.name} -> {event.result}")
            elif isinstance(event, ModelEnd) and answers(event.message):
                print(f"{who}: {event.message.text}")
        snapshot = desk.get_state(config)
        assert snapshot is not None
        print(f"active agent now: {snapshot.values['active_agent']}")
    assert snapshot is not None
    messages = snapshot.values["messages"]
    calls = sum(len(m.tool_calls) for m in messages if isinstance(m, AssistantMessage))
    answered = sum(len(m.responses) for m in messages if isinstance(m, ToolResponseMessage))
    print(
        f"== one thread, {len(messages)} messages: {calls} tool calls (handoffs included), {answered} answered"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
