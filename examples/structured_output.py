"""Structured output: the agent looks an order up with a tool, then answers with a validated
``Invoice`` (a pydantic model) instead of free text.

``output_type(Invoice)`` makes the final answer an ``Invoice``: offline, a scripted model calls
the ``order_details`` tool, then the final-answer tool ``final_answer_invoice`` (the ``tool``
strategy); with ``--live`` an OpenAI-compatible model gets OpenAI's json_schema
``response_format`` instead (the ``native`` strategy) and may call the tool first all the
same. A validator of our own checks that the total adds up, and sends the model back to fix
it when it does not. ``call_structured`` returns the ``Invoice``.

    python examples/structured_output.py [--live]
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from _models import choose, parse_args, served
from pydantic import BaseModel, Field

from graph_agent import OutputRetry, ReactAgent, RunnableConfig, tool
from graph_agent.messages import AssistantMessage, ToolCall, ToolResponseMessage
from graph_agent.models import ChatModel, ScriptedChatModel

ORDERS = {
    "A-1001": {
        "customer": "Ada Lovelace",
        "items": [
            {"sku": "NB-01", "name": "Notebook", "quantity": 2, "unit_price": 4.5},
            {"sku": "PN-07", "name": "Pen", "quantity": 1, "unit_price": 2.0},
        ],
    }
}


class InvoiceLine(BaseModel):
    sku: str
    description: str
    quantity: int = Field(description="how many were ordered")
    unit_price: float = Field(description="price of one, in euros")


class Invoice(BaseModel):
    """An invoice for one order, in euros."""

    order_id: str
    customer: str
    lines: list[InvoiceLine]
    total: float = Field(description="the sum of quantity x unit_price over the lines")


@tool(description="The customer and the items of an order, as JSON")
def order_details(order_id: str) -> str:
    order = ORDERS.get(order_id)
    return json.dumps(order) if order else f"no order {order_id}"


def total_adds_up(invoice: Invoice) -> Invoice:
    """An output validator: a wrong total goes back to the model to be fixed."""
    expected = round(sum(line.quantity * line.unit_price for line in invoice.lines), 2)
    if abs(invoice.total - expected) > 0.005:
        raise OutputRetry(f"total is {invoice.total}, but the lines add up to {expected}")
    return invoice


def offline_model() -> ScriptedChatModel:
    lookup = ToolCall(id="call_1", name="order_details", arguments='{"order_id": "A-1001"}')
    invoice = {
        "order_id": "A-1001",
        "customer": "Ada Lovelace",
        "lines": [
            {"sku": "NB-01", "description": "Notebook", "quantity": 2, "unit_price": 4.5},
            {"sku": "PN-07", "description": "Pen", "quantity": 1, "unit_price": 2.0},
        ],
        "total": 11.0,
    }
    answer = ToolCall(id="call_2", name="final_answer_invoice", arguments=json.dumps(invoice))
    return ScriptedChatModel(
        [AssistantMessage("", tool_calls=[lookup]), AssistantMessage("", tool_calls=[answer])]
    )


def build(model: ChatModel) -> ReactAgent:
    """The billing agent, on ``model``: its answer an ``Invoice``."""
    return (
        ReactAgent.builder()
        .name("billing")
        .model(model)
        .tools(order_details)
        .system_prompt("You write invoices. Look the order up before you write one.")
        .output_type(Invoice)
        .output_validator(total_adds_up)
        .build()
    )


# served: `graph-agent serve examples/structured_output.py:agent` (its model: see _models.py)
agent = build(served(offline_model))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("An agent whose answer is a validated Invoice.", argv)
    agent = build(choose(args, offline_model()))
    spec = agent.output_spec
    assert spec is not None
    if spec.strategy == "tool":
        print(f"strategy: tool ({', '.join(spec.tool_names)} beside order_details)")
    else:
        print(f"strategy: {spec.strategy} (json_schema response_format, strict: {spec.strict})")
    config = RunnableConfig(thread_id="invoice-A-1001")
    question = "Make the invoice for order A-1001."
    print(f"user: {question}")
    invoice = agent.call_structured(question, config)
    snapshot = agent.get_state(config)
    assert snapshot is not None
    for message in snapshot.values["messages"]:
        if isinstance(message, ToolResponseMessage):
            for response in message.responses:
                if response.name == "order_details":
                    print(f"  tool order_details -> {response.response_data}")
    print(f"{type(invoice).__name__} {invoice.order_id} for {invoice.customer}:")
    for line in invoice.lines:
        amount = line.quantity * line.unit_price
        print(f"  {line.quantity} x {line.description} @ {line.unit_price:.2f} = {amount:.2f}")
    print(f"  total: {invoice.total:.2f} EUR")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
