"""A return-direct tool: its result is the agent's answer, and the model is not called again
to rephrase it (one model call instead of two; the tool's exact words reach the user).

``@tool(return_direct=True)``: when every tool of a batch is return-direct, the run ends
after the tool node and ``agent.call`` returns the tool's result as an ``AssistantMessage``.

    python examples/return_direct.py [--live]
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from _models import choose, parse_args, served

from graph_agent import ChatResponse, ReactAgent, RunnableConfig, tool
from graph_agent.messages import AssistantMessage, ToolCall
from graph_agent.models import ChatModel, ScriptedChatModel
from hooks import ModelInterceptor, ModelRequest
from hooks.interceptors import ModelCallHandler

ORDERS = {"A-1001": ("shipped", "2026-05-14"), "A-1002": ("being packed", "2026-05-16")}


@tool(return_direct=True, description="The status of an order, given to the customer as is")
def order_status(order_id: str) -> str:
    status, eta = ORDERS.get(order_id, ("unknown", "-"))
    return f"Order {order_id}: {status}, expected delivery {eta}."


class CountModelCalls(ModelInterceptor):
    """Counts the agent's model calls (interceptors wrap every one)."""

    def __init__(self) -> None:
        self.calls = 0

    def intercept_model(self, request: ModelRequest, handler: ModelCallHandler) -> ChatResponse:
        self.calls += 1
        return handler(request)


def offline_model() -> ScriptedChatModel:
    """One scripted answer, the tool call: a second model call would fail the script."""
    arguments = json.dumps({"order_id": "A-1001"})
    call = ToolCall(id="call_1", name="order_status", arguments=arguments)
    return ScriptedChatModel([AssistantMessage("", tool_calls=[call])])


def build(model: ChatModel, *interceptors: CountModelCalls) -> ReactAgent:
    """The order desk, on ``model``, with ``interceptors``."""
    return (
        ReactAgent.builder()
        .name("order_desk")
        .model(model)
        .tools(order_status)
        .interceptors(*interceptors)
        .system_prompt("You answer questions about orders with the order_status tool.")
        .build()
    )


# served: `graph-agent serve examples/return_direct.py:agent` (its model: see _models.py)
agent = build(served(offline_model))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("A tool whose result is the agent's answer.", argv)
    counter = CountModelCalls()
    agent = build(choose(args, offline_model()), counter)
    config = RunnableConfig(thread_id="order-A-1001")
    question = "Where is my order A-1001?"
    print(f"user: {question}")
    answer = agent.call(question, config)
    print(f"assistant: {answer.text}")
    history = reversed(list(agent.get_state_history(config)))
    nodes = [node for snapshot in history for node in snapshot.metadata.get("nodes", ())]
    print(f"nodes run: {' -> '.join(nodes)}")
    print(f"return_direct: {answer.metadata.get('return_direct')}")
    print(f"model calls: {counter.calls}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
