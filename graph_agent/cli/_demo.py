"""``graph-agent demo``: an agent you can watch, offline (``graph-agent chat`` is in ``_chat``)."""

from __future__ import annotations

import json
from typing import IO, Any

from checkpoint import MemorySaver

from ..agent import ReactAgent
from ..graph import OverAllState, RunnableConfig
from ..messages import AssistantMessage, ToolCall, ToolResponseMessage, UserMessage
from ..models import FunctionChatModel, Prompt
from ..tools import tool

# -- the demo ----------------------------------------------------------------------------------

WEATHER = {"lisbon": "sunny, 24°C", "oslo": "snow, -3°C"}
EUR_PER = {"USD": 0.92, "GBP": 1.17}


@tool
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return WEATHER.get(city.lower(), "no forecast for that city")


@tool
def convert_currency(amount: float, currency: str) -> str:
    """Convert an amount of a currency (USD, GBP) to EUR."""
    rate = EUR_PER.get(currency.upper())
    if rate is None:
        raise ValueError(f"unknown currency {currency!r}")
    return f"{amount * rate:.2f} EUR"


def _demo_model() -> FunctionChatModel:
    """A deterministic stand-in for an LLM: it asks for both tools on the first question,
    answers from their results, and answers the second question from the conversation."""

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            found = {r.name: r.response_data for r in last.responses}
            return AssistantMessage(
                f"Lisbon is {found['get_weather']} today, and 200 USD is about "
                f"{found['convert_currency']}."
            )
        asked = [m.text for m in prompt.messages if isinstance(m, UserMessage)]
        if len(asked) > 1:
            return AssistantMessage(f"Earlier you asked: {asked[0]!r}")
        calls = [
            ToolCall(
                id="call_weather", name="get_weather", arguments=json.dumps({"city": "Lisbon"})
            ),
            ToolCall(
                id="call_money",
                name="convert_currency",
                arguments=json.dumps({"amount": 200, "currency": "USD"}),
            ),
        ]
        return AssistantMessage("", tool_calls=calls)

    return FunctionChatModel(reply)


def _tool_log_hook() -> Any:
    from hooks import ModelHook

    class ToolLog(ModelHook):
        """Records in state which tools the model asked for, turn after turn."""

        def after_model(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any] | None:
            message = state["messages"][-1]
            if not message.tool_calls:
                return None
            return {
                "tools_used": [*state.get("tools_used", []), *(c.name for c in message.tool_calls)]
            }

    return ToolLog()


def demo_agent() -> ReactAgent:
    """The demo's agent: a scripted model, two tools, a hook, a ``MemorySaver``. Offline, so
    ``graph-agent chat graph_agent.cli:demo_agent`` shows a chat with your own agent."""
    return (
        ReactAgent.builder()
        .name("travel-assistant")
        .model(_demo_model())
        .tools(get_weather, convert_currency)
        .system_prompt("You help travellers. Use the tools for facts.")
        .hooks(_tool_log_hook())
        .saver(MemorySaver())
        .build()
    )


def run_demo(out: IO[str]) -> int:
    """The offline demo: two tool calls in one step, a hook, memory across turns, the graph."""
    agent = demo_agent()
    config = RunnableConfig(thread_id="demo", metadata={"user_id": "ada"})

    def say(text: str) -> None:
        print(text, file=out)

    question = "I'm flying to Lisbon with 200 USD. What's the weather, and how much is that in EUR?"
    say(f"user: {question}")
    for output in agent.stream(question, config):
        for message in (output.update or {}).get("messages", []):
            if isinstance(message, AssistantMessage) and message.tool_calls:
                asked = ", ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
                say(f"  [{output.node}] the model asks for {asked}")
            elif isinstance(message, ToolResponseMessage):
                for response in message.responses:
                    say(f"  [{output.node}] {response.name} -> {response.response_data}")
            elif isinstance(message, AssistantMessage):
                say(f"assistant: {message.answer}")
    state = agent.get_state(config)
    assert state is not None
    say(f"  the ToolLog hook recorded tools_used={state.values['tools_used']}")

    follow_up = "What did I ask you before?"
    say(f"user: {follow_up}")
    say(f"assistant: {agent.call(follow_up, config).answer}")
    state = agent.get_state(config)
    assert state is not None
    say(
        f"  thread 'demo' now holds {len(state.values['messages'])} messages in {len(list(agent.get_state_history(config)))} checkpoints"
    )
    say("\nThe agent's graph (Mermaid):")
    out.write(agent.graph.draw_mermaid())
    return 0
