"""Where an agent's tools come from: a ``ToolCallbackProvider``, names resolved by a
``resolver``, and all of them (plus a plain ``@tool``) combined in one agent.

``StaticToolCallbackProvider`` hands over a set of tools; ``tool_names`` + ``resolver``
(``StaticToolCallbackResolver``s behind a ``DelegatingToolCallbackResolver``) picks tools
by name from a larger catalogue, once, at ``build()``. Each agent prints the tools its model
is offered (recorded by a ``ModelInterceptor``) and answers one question.

    python examples/provider_tools.py [--live]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from _models import choose, parse_args, served

from graph_agent import (
    ChatResponse,
    DelegatingToolCallbackResolver,
    ReactAgent,
    ReactAgentBuilder,
    StaticToolCallbackProvider,
    StaticToolCallbackResolver,
    ToolCallbacks,
    tool,
)
from graph_agent.messages import AssistantMessage, ToolCall, ToolResponseMessage
from graph_agent.models import FunctionChatModel, Prompt
from hooks import ModelCallHandler, ModelInterceptor, ModelRequest


@tool(description="The local time in a city")
def local_time(city: str) -> str:
    return f"14:05 in {city}"


@tool(description="Current weather for a city")
def get_weather(city: str) -> str:
    return f"sunny, 24 degrees in {city}"


@tool(description="Convert an amount of euros to another currency")
def convert_currency(amount: float, currency: str) -> str:
    return f"{amount:.2f} EUR = {amount * 1.08:.2f} {currency}"


@tool(description="Book a flight to a city")
def book_flight(city: str) -> str:
    return f"flight to {city} booked, seat 12A"


class HotelDesk:
    """An object whose @tool methods join the catalogue."""

    @tool(description="Hotels with free rooms in a city")
    def find_hotels(self, city: str) -> list[str]:
        return [f"Hotel Central {city}", f"Casa do Rio {city}"]

    @tool(description="Book a hotel room")
    def book_hotel(self, hotel: str) -> str:
        return f"room booked at {hotel}"


# A provider: a set of tools handed over as one.
TRAVEL_INFO = StaticToolCallbackProvider(get_weather, convert_currency)

# A catalogue of tools by name: the first resolver that knows a name wins.
CATALOGUE = DelegatingToolCallbackResolver(
    [
        StaticToolCallbackResolver([book_flight]),
        StaticToolCallbackResolver(ToolCallbacks.from_object(HotelDesk())),
    ]
)

# What the offline model calls, when the tool is offered: like an LLM, it uses what it has.
PLAN = {
    "get_weather": {"city": "Lisbon"},
    "book_flight": {"city": "Lisbon"},
    "find_hotels": {"city": "Lisbon"},
}


def offline_model() -> FunctionChatModel:
    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return AssistantMessage("Done: " + "; ".join(r.response_data for r in last.responses))
        offered = [t.tool_definition.name for t in prompt.options.tool_callbacks]
        calls = [
            ToolCall(id=f"call_{i}", name=name, arguments=json.dumps(args))
            for i, (name, args) in enumerate(PLAN.items(), start=1)
            if name in offered
        ]
        return AssistantMessage("", tool_calls=calls)

    return FunctionChatModel(reply)


class OfferedTools(ModelInterceptor):
    """Records the names of the tools offered on each model call."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def intercept_model(self, request: ModelRequest, handler: ModelCallHandler) -> ChatResponse:
        self.calls.append([t.tool_definition.name for t in request.options.tool_callbacks])
        return handler(request)


# served: `graph-agent serve examples/provider_tools.py:agent` (its model: see _models.py)
agent = (
    ReactAgent.builder()
    .name("travel_desk")
    .model(served(offline_model))
    .tools(local_time)
    .tool_callback_providers(TRAVEL_INFO)
    .tool_names("book_flight", "find_hotels")
    .resolver(CATALOGUE)
    .build()
)


def run(title: str, builder: ReactAgentBuilder, args: argparse.Namespace) -> None:
    offered = OfferedTools()
    model = choose(args, offline_model())
    agent = builder.name("travel_desk").model(model).interceptors(offered).build()
    question = "I'm off to Lisbon: weather, a flight and a hotel, please."
    answer = agent.call(question)
    print(f"== {title}")
    print(f"   agent.tools:    {[t.tool_definition.name for t in agent.tools]}")
    print(f"   model offered:  {offered.calls[0]}")
    print(f"   assistant: {answer.text}")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("Tools from a provider, by name with a resolver, and combined.", argv)
    run(
        "1. tool_callback_providers(StaticToolCallbackProvider(get_weather, convert_currency))",
        ReactAgent.builder().tool_callback_providers(TRAVEL_INFO),
        args,
    )
    run(
        "2. tool_names('book_flight', 'find_hotels') + resolver(DelegatingToolCallbackResolver)",
        ReactAgent.builder().tool_names("book_flight", "find_hotels").resolver(CATALOGUE),
        args,
    )
    run(
        "3. all combined: tools(local_time) + the provider + tool_names/resolver",
        ReactAgent.builder()
        .tools(local_time)
        .tool_callback_providers(TRAVEL_INFO)
        .tool_names("book_flight", "find_hotels")
        .resolver(CATALOGUE),
        args,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
