"""W2's agent, shared by the workloads that run it (workloads.py, W15's serving_agents.py):
the scripted model and the trivial tool of benchmarks/WORKLOADS.md, and ``make_react``, the
ReAct agent over them (prebuilt, or hand-built as LangGraph's variant)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from graph_agent import (
    END,
    START,
    AssistantMessage,
    ChatResponse,
    KeyStrategy,
    Prompt,
    ReactAgent,
    StateGraph,
    ToolCall,
    ToolCallingChatOptions,
    ToolCallingManager,
    ToolResponseMessage,
    UserMessage,
    tool,
)

__all__ = ["ScriptedModel", "echo", "make_react"]


class ScriptedModel:
    """Stateless: counts tool results since the last user message; asks for ``echo`` until
    it has ``k`` of them, then answers."""

    def __init__(self, k: int) -> None:
        self.k = k

    def call(self, prompt: Prompt) -> ChatResponse:
        n = 0
        for message in reversed(prompt.messages):
            if isinstance(message, UserMessage):
                break
            if isinstance(message, ToolResponseMessage):
                n += 1
        if n < self.k:
            call = ToolCall(id=f"call_{n}", name="echo", arguments=json.dumps({"x": n}))
            return ChatResponse.of(AssistantMessage("", tool_calls=(call,)), "tool_calls")
        return ChatResponse.of(AssistantMessage(f"final answer after {n} tool calls"), "stop")

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        yield self.call(prompt)

    async def acall(self, prompt: Prompt) -> ChatResponse:
        return self.call(prompt)

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        yield self.call(prompt)


@tool
def echo(x: int) -> str:
    """Echo the integer back."""
    return f"ok {x}"


def make_react(k: int, saver: Any, variant: str = "prebuilt") -> Any:
    """``prebuilt``: ReactAgent. ``handbuilt``: a StateGraph with a model node, a tool node
    (ToolCallingManager) and the conditional edge, like LangGraph's hand-built variant."""
    model = ScriptedModel(k)
    if variant == "prebuilt":
        return ReactAgent(
            name="bench", model=model, tools=[echo], saver=saver, max_iterations=10_000
        )
    manager = ToolCallingManager()
    options = ToolCallingChatOptions(tool_callbacks=(echo,))

    def agent(state: Any) -> dict[str, Any]:
        return {"messages": [model.call(Prompt(state["messages"], options)).result.output]}

    def tools(state: Any) -> dict[str, Any]:
        last = state["messages"][-1]
        result = manager.execute_tool_calls(
            Prompt(state["messages"][:-1], options), ChatResponse.of(last)
        )
        return {"messages": [result.tool_response]}

    def route(state: Any) -> str:
        return "tools" if state["messages"][-1].tool_calls else END

    graph = StateGraph(key_strategies={"messages": KeyStrategy.APPEND})
    graph.add_node("agent", agent).add_node("tools", tools)
    graph.add_edge(START, "agent").add_conditional_edges("agent", route, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile(saver=saver, recursion_limit=10_000)
