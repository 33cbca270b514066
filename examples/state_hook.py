"""A hook that updates the agent's state after every model call: the user's name (once they
have said it), when the state was last updated, and how many model calls the thread made.

A ``ModelHook``'s ``after_model`` returns a dict; the agent merges it into the state like
any node's update, and the thread keeps it across turns.

    python examples/state_hook.py [--live]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from _models import choose, parse_args, served

from graph_agent import OverAllState, ReactAgent, RunnableConfig
from graph_agent.messages import AssistantMessage, UserMessage
from graph_agent.models import ChatModel, FunctionChatModel, Prompt
from hooks import ModelHook

NAME = re.compile(r"\bmy name is (\w+)", re.IGNORECASE)


class UpdateStateHook(ModelHook):
    """After each model call: ``user_name``, ``last_updated`` and ``model_calls``."""

    def after_model(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        update: dict[str, Any] = {
            "last_updated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "model_calls": state.get("model_calls", 0) + 1,
        }
        for message in state["messages"]:
            found = NAME.search(message.text) if isinstance(message, UserMessage) else None
            if found:
                update["user_name"] = found.group(1)
        return update


def offline_model() -> FunctionChatModel:
    """Greets by name when the conversation says it, like an LLM would."""

    def reply(prompt: Prompt) -> AssistantMessage:
        said = " ".join(m.text for m in prompt.messages if isinstance(m, UserMessage))
        found = NAME.search(said)
        if prompt.messages[-1].text.lower().startswith("what is my name"):
            return AssistantMessage(f"Your name is {found.group(1)}." if found else "I don't know.")
        return AssistantMessage(f"Nice to meet you, {found.group(1)}!" if found else "Hello!")

    return FunctionChatModel(reply)


def build(model: ChatModel) -> ReactAgent:
    """The greeter, on ``model``, with the hook that updates the state."""
    return ReactAgent.builder().name("greeter").model(model).hooks(UpdateStateHook()).build()


# served: `graph-agent serve examples/state_hook.py:agent` (its model: see _models.py)
agent = build(served(offline_model))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("A hook that updates the state after the model.", argv)
    agent = build(choose(args, offline_model()))
    config = RunnableConfig(thread_id="greeting")
    for text in ["Hello!", "My name is Ada.", "What is my name?"]:
        reply = agent.call(text, config)
        snapshot = agent.get_state(config)
        assert snapshot is not None
        state = snapshot.values
        print(f"user: {text}")
        print(f"assistant: {reply.text}")
        print(
            f"  state: user_name={state.get('user_name')!r} model_calls={state['model_calls']} "
            f"last_updated={state['last_updated']}"
        )
    print("the agent's graph (the hook is a node after the model):")
    print(agent.graph.draw_mermaid())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
