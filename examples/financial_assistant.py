"""A financial assistant whose tools know who is asking: the user id comes from the run's
config (``RunnableConfig(metadata={"user_id": ...})``), read by each tool from its
``ToolContext``, never from the model's arguments, so the model cannot ask for another
user's accounts.

    python examples/financial_assistant.py [--live]
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from _models import choose, parse_args, served

from graph_agent import ReactAgent, RunnableConfig, ToolContext, tool
from graph_agent.messages import AssistantMessage, ToolCall, ToolResponseMessage, UserMessage
from graph_agent.models import ChatModel, FunctionChatModel, Prompt

# What the bank's backend would return, by user id.
ACCOUNTS: dict[str, list[dict[str, str]]] = {
    "u-ada": [
        {"id": "CHK-1001", "kind": "checking", "balance": "1250.00 EUR"},
        {"id": "SAV-1002", "kind": "savings", "balance": "8400.00 EUR"},
    ],
    "u-bob": [{"id": "CHK-2001", "kind": "checking", "balance": "310.75 EUR"}],
}


def _user_id(ctx: ToolContext) -> str:
    user_id = ctx.config.metadata.get("user_id") if ctx.config is not None else None
    if not user_id:
        raise ValueError("no user_id in the run's config metadata; who is asking?")
    return str(user_id)


@tool(description="List the accounts of the user who is asking, with their balances")
def list_accounts(ctx: ToolContext) -> list[dict[str, str]]:
    return ACCOUNTS.get(_user_id(ctx), [])


@tool(description="The balance of one of the asking user's accounts")
def account_balance(account_id: str, ctx: ToolContext) -> str:
    for account in ACCOUNTS.get(_user_id(ctx), []):
        if account["id"] == account_id:
            return account["balance"]
    return f"account {account_id} is not one of this user's accounts"


def offline_model() -> FunctionChatModel:
    """Calls the tool the question needs, then answers from its result, like an LLM would."""

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, UserMessage):
            account = re.search(r"[A-Z]{3}-\d{4}", last.text)
            if account:
                arguments = json.dumps({"account_id": account.group()})
                call = ToolCall(id="call_1", name="account_balance", arguments=arguments)
            else:
                call = ToolCall(id="call_1", name="list_accounts", arguments="{}")
            return AssistantMessage("", tool_calls=[call])
        assert isinstance(last, ToolResponseMessage)
        response = last.responses[0]
        if response.name == "account_balance":
            if response.response_data.startswith("account "):
                return AssistantMessage(f"Sorry, {response.response_data}.")
            return AssistantMessage(f"That account holds {response.response_data}.")
        accounts = json.loads(response.response_data)
        lines = [f"{a['kind']} {a['id']}: {a['balance']}" for a in accounts]
        return AssistantMessage(f"You have {len(accounts)} account(s): " + "; ".join(lines) + ".")

    return FunctionChatModel(reply)


def build_agent(model: ChatModel) -> ReactAgent:
    return (
        ReactAgent.builder()
        .name("financial_assistant")
        .model(model)
        .tools(list_accounts, account_balance)
        .system_prompt(
            "You are a bank's assistant. Use the tools to answer questions about the user's "
            "accounts; never guess balances."
        )
        .build()
    )


def show(agent: ReactAgent, user_id: str, question: str) -> None:
    """Ask ``question`` as ``user_id`` and print each step of the run."""
    config = RunnableConfig(thread_id=f"{user_id}-session", metadata={"user_id": user_id})
    print(f"[{user_id}] user: {question}")
    for output in agent.stream(question, config):
        for message in (output.update or {}).get("messages", ()):
            if isinstance(message, AssistantMessage) and message.tool_calls:
                for call in message.tool_calls:
                    print(f"[{user_id}]   model calls {call.name}({call.arguments})")
            elif isinstance(message, ToolResponseMessage):
                for response in message.responses:
                    print(f"[{user_id}]   tool {response.name} -> {response.response_data}")
            elif isinstance(message, AssistantMessage):
                print(f"[{user_id}] assistant: {message.text}")


# served: `graph-agent serve examples/financial_assistant.py:agent` (its model: see _models.py)
agent = build_agent(served(offline_model))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("Tools that read the user id from the run's config.", argv)
    agent = build_agent(choose(args, offline_model()))
    show(agent, "u-ada", "Which accounts do I have?")
    show(agent, "u-bob", "Which accounts do I have?")
    # Bob asks for Ada's account: the tool looks in Bob's accounts only.
    show(agent, "u-bob", "What is the balance of SAV-1002?")
    show(agent, "u-ada", "What is the balance of SAV-1002?")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
