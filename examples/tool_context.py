"""``ToolContext``: what a tool can see besides the model's arguments, and how it writes state.

``add_to_cart`` reads the conversation so far (``context.state["messages"]``), the user id
from the run's config (``context.config.metadata["user_id"]``), the shop's currency from
the agent's ``tool_context``, and writes ``context.extra_state``: ``cart`` (an APPEND key,
one item per call) and ``last_item`` (REPLACE). The agent merges what the tools wrote into
its state after the tool node; the thread keeps it across turns.

    python examples/tool_context.py [--live]
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from _models import choose, parse_args, served

from graph_agent import KeyStrategy, ReactAgent, RunnableConfig, ToolContext, tool
from graph_agent.messages import AssistantMessage, ToolCall, ToolResponseMessage, UserMessage
from graph_agent.models import ChatModel, FunctionChatModel, Prompt

PRICES = {"coffee": 4.5, "croissant": 2.2, "juice": 3.9}


@tool(description="Add an item to the shopping cart of the user who is asking")
def add_to_cart(item: str, quantity: int, context: ToolContext) -> str:
    state, config = context.state, context.config
    assert state is not None and config is not None  # always set inside an agent
    user_id = config.metadata["user_id"]  # from the caller, not from the model
    currency = context.get("currency", "EUR")  # one of the agent's tool_context entries
    messages = state["messages"]  # the conversation so far, this call's request last
    asked = sum(isinstance(m, UserMessage) for m in messages)
    price = PRICES.get(item, 1.0) * quantity
    context.extra_state["cart"] = {"item": item, "quantity": quantity, "price": price}
    context.extra_state["last_item"] = item
    return (
        f"added {quantity} x {item} ({price:.2f} {currency}) to {user_id}'s cart; "
        f"seen: {len(messages)} messages, {asked} from the user"
    )


def offline_model() -> FunctionChatModel:
    """Turns "N item" phrases into add_to_cart calls, then confirms, like an LLM would."""

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            items = [json.loads(c.arguments)["item"] for c in prompt.messages[-2].tool_calls]
            return AssistantMessage(f"Added {' and '.join(items)} to your cart.")
        wanted = re.findall(r"(\d+) (coffee|croissant|juice)", last.text)
        calls = [
            ToolCall(
                id=f"call_{i}",
                name="add_to_cart",
                arguments=json.dumps({"item": item, "quantity": int(n)}),
            )
            for i, (n, item) in enumerate(wanted, start=1)
        ]
        return AssistantMessage("" if calls else "What would you like?", tool_calls=calls)

    return FunctionChatModel(reply)


def build(model: ChatModel) -> ReactAgent:
    """The cafe's agent, on ``model``."""
    return (
        ReactAgent.builder()
        .name("cafe")
        .model(model)
        .tools(add_to_cart)
        .tool_context({"currency": "EUR"})
        .key_strategies({"cart": KeyStrategy.APPEND})  # last_item: REPLACE, the default
        .system_prompt("You take orders at a cafe. Use add_to_cart for every item ordered.")
        .build()
    )


# served: `graph-agent serve examples/tool_context.py:agent` (its model: see _models.py)
agent = build(served(offline_model))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("A tool reading ToolContext and writing extra_state.", argv)
    agent = build(choose(args, offline_model()))
    config = RunnableConfig(thread_id="order-17", metadata={"user_id": "u-ada"})
    messages_before = 0
    for text in ["I'd like 2 coffee and 1 croissant.", "And 1 juice, please."]:
        reply = agent.call(text, config)
        snapshot = agent.get_state(config)
        assert snapshot is not None
        state = snapshot.values
        print(f"user: {text}")
        turn = state["messages"][messages_before:]  # this turn's messages
        for message in turn:
            if isinstance(message, ToolResponseMessage):
                for response in message.responses:
                    print(f"  tool {response.name} -> {response.response_data}")
        print(f"assistant: {reply.text}")
        print(f"  state['cart']: {[(c['quantity'], c['item']) for c in state.get('cart', [])]}")
        print(f"  state['last_item']: {state.get('last_item')!r}")
        messages_before = len(state["messages"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
