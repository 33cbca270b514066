"""A calculator object whose ``@tool`` methods become an agent's tools (``method_tools``); the
model's two calls of one step run in parallel.

python examples/calculator_tools.py [--live]
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Annotated

from _models import choose, parse_args, served

from graph_agent import ReactAgent, ToolCallbacks, ToolParam, tool
from graph_agent.messages import AssistantMessage, ToolCall, ToolResponseMessage
from graph_agent.models import ScriptedChatModel


class Calculator:
    """Exact arithmetic the model should not do in its head."""

    def __init__(self) -> None:
        self.calls = 0

    @tool(description="Add two numbers")
    def add(self, a: float, b: float) -> float:
        self.calls += 1
        return a + b

    @tool(description="Multiply two numbers")
    def multiply(self, a: float, b: float) -> float:
        self.calls += 1
        return a * b

    @tool
    def square_root(self, x: Annotated[float, ToolParam(description="a number >= 0")]) -> float:
        """The square root of x."""
        self.calls += 1
        if x < 0:
            raise ValueError("x must not be negative")
        return math.sqrt(x)


def offline_model() -> ScriptedChatModel:
    def call(call_id: str, name: str, **args: float) -> ToolCall:
        return ToolCall(id=call_id, name=name, arguments=json.dumps(args))

    return ScriptedChatModel(
        [
            AssistantMessage(
                "", tool_calls=[call("c1", "multiply", a=12, b=34), call("c2", "square_root", x=-1)]
            ),
            AssistantMessage("", tool_calls=[call("c3", "square_root", x=408)]),
            "12 times 34 is 408, and its square root is about 20.199. (A negative number has no real square root.)",
        ]
    )


# served: `graph-agent serve examples/calculator_tools.py:agent` (its model: see _models.py)
agent = ReactAgent(name="calculator", model=served(offline_model), method_tools=[Calculator()])


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("Calculator tools from an object's @tool methods.", argv)
    calculator = Calculator()
    print("tools:", [c.tool_definition.name for c in ToolCallbacks.from_object(calculator)])
    agent = ReactAgent(
        name="calculator", model=choose(args, offline_model()), method_tools=[calculator]
    )
    state = agent.invoke("What is 12 times 34, and the square roots of -1 and of that product?")
    calls = {
        c.id: c for m in state["messages"] if isinstance(m, AssistantMessage) for c in m.tool_calls
    }
    for message in state["messages"]:
        if isinstance(message, ToolResponseMessage):
            for response in message.responses:
                status = "error" if " failed: " in response.response_data else "ok"
                print(
                    f"tool {response.name}({calls[response.id].arguments}) [{status}] -> {response.response_data}"
                )
    print(f"assistant: {state['messages'][-1].text}")
    print(f"calls the calculator served: {calculator.calls}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
