"""A tool that summarises the conversation so far by reading the agent's state
(``ToolContext.state["messages"]``): on a thread, that is every earlier turn too. Two turns
of questions, then a summary of both; a new thread has nothing to summarise.

    python examples/conversation_summary.py [--live]
"""

from __future__ import annotations

from collections.abc import Sequence

from _models import choose, parse_args, served

from graph_agent import ReactAgent, RunnableConfig, ToolContext, tool
from graph_agent.messages import AssistantMessage, ToolCall, ToolResponseMessage, UserMessage
from graph_agent.models import ChatModel, FunctionChatModel, Prompt


@tool(description="Summarise the conversation so far (earlier turns included)")
def summarize_conversation(ctx: ToolContext) -> str:
    assert ctx.state is not None
    messages = list(ctx.state["messages"])
    # "So far": everything before the request being answered (the latest user message).
    latest = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    lines = []
    for message in messages[:latest]:
        if isinstance(message, UserMessage):
            lines.append(f"- the user said: {message.text}")
        elif isinstance(message, AssistantMessage) and message.text:
            lines.append(f"- the assistant said: {message.text}")
    if not lines:
        return "Nothing has been said yet."
    return f"{len(lines)} messages so far:\n" + "\n".join(lines)


def offline_model() -> FunctionChatModel:
    """Answers travel questions, and calls the summary tool when asked to sum up."""

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return AssistantMessage(f"Here is what we covered. {last.text}")
        text = last.text.lower()
        if "summar" in text:
            call = ToolCall(id="call_1", name="summarize_conversation", arguments="{}")
            return AssistantMessage("", tool_calls=[call])
        if "lisbon" in text:
            return AssistantMessage("Lisbon in May is sunny, around 22 degrees: pack light layers.")
        if "tram" in text:
            return AssistantMessage("Take tram 28 early in the morning, before the crowds.")
        return AssistantMessage("Tell me more about your trip.")

    return FunctionChatModel(reply)


def build(model: ChatModel) -> ReactAgent:
    """The travel buddy, on ``model``."""
    return (
        ReactAgent.builder()
        .name("travel_buddy")
        .model(model)
        .tools(summarize_conversation)
        .system_prompt("You help plan trips. Use summarize_conversation when asked to sum up.")
        .build()
    )


# served: `graph-agent serve examples/conversation_summary.py:agent` (its model: see _models.py)
agent = build(served(offline_model))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("A tool that reads the conversation from the agent's state.", argv)
    agent = build(choose(args, offline_model()))
    config = RunnableConfig(thread_id="trip")
    turns = [
        "I'm going to Lisbon in May. What's the weather like?",
        "Which tram should I take?",
        "Please summarize our conversation so far.",
    ]
    for number, text in enumerate(turns, start=1):
        print(f"--- turn {number} (thread 'trip')")
        print(f"user: {text}")
        print(f"assistant: {agent.call(text, config).text}")
    print("--- a new thread (thread 'other')")
    print("user: Please summarize our conversation so far.")
    reply = agent.call(
        "Please summarize our conversation so far.", RunnableConfig(thread_id="other")
    )
    print(f"assistant: {reply.text}")
    snapshot = agent.get_state(config)
    assert snapshot is not None
    print(f"thread 'trip' holds {len(snapshot.values['messages'])} messages")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
