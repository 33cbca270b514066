"""Streaming: the answer as it is written, and the agent's steps as they happen.

1. ``agent.stream_messages(...)`` yields the model's text chunks while it streams, across
   every model call of the run (tool rounds run in between).
2. ``agent.stream(...)`` yields a ``NodeOutput(node, update, state)`` per node: the model
   asking for tools, the tools' results, the final answer.
3. ``ChatClient.create(model).prompt(...).tools(...).stream()``: text chunks, no agent.

Offline, the model streams word by word. ``astream_messages`` / ``astream`` / ``astream()``
are the async versions.

    python examples/streaming.py [--live]
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from _models import choose, parse_args, served

from graph_agent import ChatClient, ReactAgent, RunnableConfig, tool
from graph_agent.messages import AssistantMessage, ToolCall, ToolResponseMessage
from graph_agent.models import ChatModel, FunctionChatModel, Prompt

WEATHER = {"Paris": "sunny, 18 degrees", "Rome": "cloudy, 21 degrees"}


@tool(description="Current weather for a city")
def get_weather(city: str) -> str:
    return WEATHER.get(city, "no data")


def offline_model() -> FunctionChatModel:
    """Asks for the weather of every city in the question at once, then sums it up."""

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            cities = [json.loads(c.arguments)["city"] for c in prompt.messages[-2].tool_calls]
            parts = [f"{c} is {r.response_data}" for c, r in zip(cities, last.responses)]
            return AssistantMessage(f"{' and '.join(parts)}.")
        calls = [
            ToolCall(id=f"call_{i}", name="get_weather", arguments=json.dumps({"city": city}))
            for i, city in enumerate(re.findall(r"Paris|Rome", last.text), start=1)
        ]
        text = "Let me check." if calls else "Ask me about a city."
        return AssistantMessage(text, tool_calls=calls)

    return FunctionChatModel(reply)


QUESTION = "What's the weather in Paris and Rome?"


def agent_for(model: ChatModel) -> ReactAgent:
    return ReactAgent(name="weather", model=model, tools=[get_weather])


# served: `graph-agent serve examples/streaming.py:agent` (its model: see _models.py)
agent = agent_for(served(offline_model))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("Streaming text chunks and tool executions.", argv)

    print("== 1. agent.stream_messages(): text chunks, '|' between them")
    chunks = []
    for chunk in agent_for(choose(args, offline_model())).stream_messages(QUESTION):
        chunks.append(chunk)
        print(chunk, end="|", flush=True)
    print(f"\n   ({len(chunks)} chunks, over every model call of the run)")

    print("== 2. agent.stream(): one NodeOutput per node, as it finishes")
    for output in agent_for(choose(args, offline_model())).stream(
        QUESTION, RunnableConfig(thread_id="stream")
    ):
        for message in (output.update or {}).get("messages", ()):
            if isinstance(message, ToolResponseMessage):
                for response in message.responses:
                    print(f"   [{output.node}] {response.name} -> {response.response_data}")
            elif isinstance(message, AssistantMessage) and message.tool_calls:
                calls = ", ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
                print(f"   [{output.node}] says {message.text!r} and asks for {calls}")
            elif isinstance(message, AssistantMessage):
                print(f"   [{output.node}] answers: {message.text}")
        print(f"   ... the state now holds {len(output.state['messages'])} messages")

    print("== 3. ChatClient ... .stream(): text chunks")
    stream = (
        ChatClient.create(choose(args, offline_model()))
        .prompt(QUESTION)
        .tools(get_weather)
        .stream()
    )
    print("|".join(stream))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
