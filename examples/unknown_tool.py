"""A hallucinated tool name: the model calls a tool that does not exist.

1. The default ``unknown_tool_strategy="respond"`` answers the call with the list of the
   tools that exist; the model picks the right one on its next call.
2. ``unknown_tool_strategy="throw"`` raises ``UnknownToolError`` (``tool_name``,
   ``available``) from ``agent.call`` instead.
3. A function ``(name, available) -> str`` writes the answer itself.

    python examples/unknown_tool.py [--live]
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from _models import choose, parse_args, served

from graph_agent import ReactAgent, UnknownToolError, tool
from graph_agent.messages import AssistantMessage, ToolCall, ToolResponseMessage
from graph_agent.models import ChatModel, FunctionChatModel, Prompt


@tool(description="Current weather for a city")
def get_weather(city: str) -> str:
    return f"light snow, -3 degrees in {city}"


@tool(description="Tomorrow's forecast for a city")
def get_forecast(city: str) -> str:
    return f"sunny tomorrow in {city}"


def offline_model() -> FunctionChatModel:
    """First guesses a tool name that does not exist, then picks one from the list it is
    given, like an LLM would."""

    def ask(name: str) -> AssistantMessage:
        arguments = json.dumps({"city": "Oslo"})
        return AssistantMessage("", tool_calls=[ToolCall(id="c1", name=name, arguments=arguments)])

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if not isinstance(last, ToolResponseMessage):
            return ask("get_current_weather")  # hallucinated
        response = last.responses[0]
        if response.name == "get_current_weather":  # it failed: read the names offered
            names = re.findall(r"\b[a-z]+_[a-z_]+\b", response.response_data)
            return ask(next(n for n in names if "weather" in n and n != response.name))
        return AssistantMessage(f"Right now: {response.response_data}.")

    return FunctionChatModel(reply)


def build(model: ChatModel, **options) -> ReactAgent:
    return ReactAgent(name="weather", model=model, tools=[get_weather, get_forecast], **options)


def show_calls(state) -> None:
    for message in state["messages"]:
        if isinstance(message, AssistantMessage) and message.tool_calls:
            for call in message.tool_calls:
                print(f"  model calls {call.name}({call.arguments})")
        elif isinstance(message, ToolResponseMessage):
            for response in message.responses:
                print(f"  tool result: {response.response_data}")
    print(f"assistant: {state['messages'][-1].text}")


# served: `graph-agent serve examples/unknown_tool.py:agent` (its model: see _models.py)
agent = build(served(offline_model))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("A hallucinated tool name and the unknown_tool_strategy.", argv)
    question = "What's the weather in Oslo?"

    print('== 1. unknown_tool_strategy="respond" (the default)')
    show_calls(build(choose(args, offline_model())).invoke(question))

    print('== 2. unknown_tool_strategy="throw"')
    try:
        build(choose(args, offline_model()), unknown_tool_strategy="throw").call(question)
    except UnknownToolError as error:
        name, available = error.tool_name, error.available
        print(f"raised UnknownToolError: tool_name={name!r}, available={available}")
        print(f"  {error}")
    else:
        print("no error: the model called a tool that exists")

    print("== 3. unknown_tool_strategy=a function (name, available) -> str")

    def strategy(name: str, available: Sequence[str]) -> str:
        return f"'{name}' is not a tool here; try {' or '.join(available)}."

    agent = build(choose(args, offline_model()), unknown_tool_strategy=strategy)
    show_calls(agent.invoke(question))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
