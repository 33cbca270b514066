"""Tool errors: by default a failing tool's error is its result, so the model can recover.

1. The tool raises: the model reads the error text as the tool's result and calls again.
2. Invalid arguments (a validation error) go back to the model the same way.
3. ``exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True)``: the
   same failure raises ``ToolExecutionException`` from ``agent.call`` instead; the thread
   keeps its last good step.

    python examples/tool_errors.py [--live]
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from _models import choose, parse_args, served

from graph_agent import (
    DefaultToolExecutionExceptionProcessor,
    ReactAgent,
    RunnableConfig,
    ToolExecutionException,
    tool,
)
from graph_agent.messages import AssistantMessage, ToolCall, ToolResponseMessage
from graph_agent.models import ChatModel, FunctionChatModel, Prompt

PRICES = {"AAPL": (221.10, 227.50), "MSFT": (410.00, 415.20)}


@tool(description="The share price of a stock, by ticker symbol, over the last days")
def stock_price(symbol: str, days: int = 1) -> str:
    if symbol not in PRICES:
        raise LookupError(f"unknown symbol {symbol!r}; use a ticker such as AAPL")
    start, now = PRICES[symbol]
    return f"{symbol} {now:.2f} USD" if days == 1 else f"{symbol} {start:.2f} -> {now:.2f} USD"


def offline_model() -> FunctionChatModel:
    """Makes a mistake first, then fixes it from the error it reads, like an LLM would."""

    def ask(arguments: dict) -> AssistantMessage:
        call = ToolCall(id="call_1", name="stock_price", arguments=json.dumps(arguments))
        return AssistantMessage("", tool_calls=[call])

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if not isinstance(last, ToolResponseMessage):
            week = "week" in last.text
            return ask({"symbol": "AAPL", "days": "a week"} if week else {"symbol": "Apple"})
        previous = json.loads(prompt.messages[-2].tool_calls[0].arguments)
        result = last.responses[0].response_data
        if result.startswith("invalid arguments"):
            return ask({**previous, "days": 7})
        if "unknown symbol" in result:
            return ask({**previous, "symbol": "AAPL"})
        return AssistantMessage(f"Here you are: {result}.")

    return FunctionChatModel(reply)


def build_agent(model: ChatModel, **options) -> ReactAgent:
    return ReactAgent(name="broker", model=model, tools=[stock_price], **options)


def show(agent: ReactAgent, question: str, thread: str) -> None:
    print(f"user: {question}")
    for output in agent.stream(question, RunnableConfig(thread_id=thread)):
        for message in (output.update or {}).get("messages", ()):
            if isinstance(message, AssistantMessage) and message.tool_calls:
                for call in message.tool_calls:
                    print(f"  model calls {call.name}({call.arguments})")
            elif isinstance(message, ToolResponseMessage):
                for response in message.responses:
                    text = response.response_data.replace("\n", "\n    ")
                    print(f"  tool result: {text}")
            elif isinstance(message, AssistantMessage):
                print(f"assistant: {message.text}")


# served: `graph-agent serve examples/tool_errors.py:agent` (its model: see _models.py)
agent = build_agent(served(offline_model))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("Tool errors reach the model, or raise with always_throw.", argv)

    print("== 1. the tool raises; the error text is the tool result")
    show(build_agent(choose(args, offline_model())), "What is Apple's share price?", "raises")

    print("== 2. invalid arguments go back to the model")
    show(build_agent(choose(args, offline_model())), "Apple over the last week?", "invalid")

    print("== 3. exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True)")
    strict = build_agent(
        choose(args, offline_model()),
        exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True),
    )
    config = RunnableConfig(thread_id="strict")
    try:
        strict.call("What is Apple's share price?", config)
    except ToolExecutionException as error:
        print(f"raised {type(error).__name__} (tool_name={error.tool_name!r}): {error}")
        print(f"  caused by {type(error.__cause__).__name__}")
        snapshot = strict.get_state(config)
        assert snapshot is not None
        kept = len(snapshot.values["messages"])
        print(f"  the thread keeps its last good step: {kept} messages, next={snapshot.next}")
    else:
        print("no error: the model did not call the tool with a bad symbol")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
