"""Who runs the tools: the framework (the default) or your own code.

With ``internal_tool_execution_enabled=False`` the model's tool calls come back to you; you
run them with a ``ToolCallingManager`` (and may inspect, log or veto them) and call the
model again with the conversation history.

    python examples/tool_execution_modes.py [--live]
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from _models import choose, parse_args, served

from graph_agent import ChatClient, ReactAgent, ToolCallingManager, tool
from graph_agent.messages import AssistantMessage, ToolCall, UserMessage
from graph_agent.models import Prompt, ScriptedChatModel, ToolCallingChatOptions


@tool(description="Look up an order's status by its id")
def order_status(order_id: str) -> str:
    return {"A-1": "shipped", "B-2": "being packed"}.get(order_id, "unknown order")


def scripted() -> ScriptedChatModel:
    call = ToolCall(id="call_1", name="order_status", arguments=json.dumps({"order_id": "A-1"}))
    return ScriptedChatModel([AssistantMessage("", tool_calls=[call]), "Order A-1 has shipped."])


def framework_controlled(args) -> None:
    print("1. Framework-controlled: ChatClient runs the tool loop")
    reply = (
        ChatClient.create(choose(args, scripted()))
        .prompt("Where is order A-1?")
        .tools(order_status)
        .call()
    )
    print(f"   tools run: {[r.name for r in reply.tool_records]}; assistant: {reply.content()}")


def user_controlled(args) -> None:
    print("2. User-controlled: internal_tool_execution_enabled=False")
    model = choose(args, scripted())
    manager = ToolCallingManager()
    options = ToolCallingChatOptions(
        tool_callbacks=(order_status,), internal_tool_execution_enabled=False
    )
    prompt = Prompt([UserMessage("Where is order A-1?")], options)
    response = model.call(prompt)
    while response.has_tool_calls():
        for call in response.result.output.tool_calls:
            print(f"   the model asks for {call.name}({call.arguments}); we approve and run it")
        result = manager.execute_tool_calls(prompt, response)
        prompt = Prompt(result.conversation_history, options)
        response = model.call(prompt)
    print(f"   assistant: {response.text}")


# served: `graph-agent serve examples/tool_execution_modes.py:agent` (its model: see _models.py)
agent = ReactAgent(name="orders", model=served(scripted), tools=[order_status])


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("Framework- and user-controlled tool execution.", argv)
    framework_controlled(args)
    user_controlled(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
