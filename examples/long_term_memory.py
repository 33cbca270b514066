"""Long-term memory: what one conversation saves, another conversation can read.

A thread is one conversation; the agent's ``store`` outlives threads. ``save_profile``
writes the user's profile with ``ToolContext.store`` under ``("profiles", user_id)``; on a
new thread (nothing of the first conversation in it) ``get_profile`` reads it back. Another
user finds no profile. The store is a ``MemoryStore`` (in process), or a ``RedisStore``
with ``--redis-url``, where profiles also outlive the process (under the key prefix
``graph_agent-example``).

    python examples/long_term_memory.py [--live] [--redis-url redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence

from _models import choose, served

from checkpoint import BaseStore, MemoryStore, RedisStore
from graph_agent import ReactAgent, RunnableConfig, ToolContext, tool
from graph_agent.messages import AssistantMessage, ToolCall, ToolResponseMessage
from graph_agent.models import ChatModel, FunctionChatModel, Prompt


def _user(ctx: ToolContext) -> tuple[str, ...]:
    assert ctx.config is not None
    return ("profiles", str(ctx.config.metadata["user_id"]))


@tool(description="Save the user's profile (name, city, diet) for future conversations")
def save_profile(name: str, city: str, diet: str, ctx: ToolContext) -> str:
    ctx.store.put(_user(ctx), "profile", {"name": name, "city": city, "diet": diet})
    return "profile saved"


@tool(description="The saved profile of the user, from earlier conversations")
def get_profile(ctx: ToolContext) -> dict[str, str] | str:
    item = ctx.store.get(_user(ctx), "profile")
    return item.value if item is not None else "no profile saved"


INTRO = re.compile(r"I'm (\w+), I live in (\w+) and I'm (\w+)")


def offline_model() -> FunctionChatModel:
    """Saves what the user tells about themselves; looks the profile up before advising."""

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            response = last.responses[0]
            if response.name == "save_profile":
                return AssistantMessage("Nice to meet you! I'll remember that.")
            if not response.response_data.startswith("{"):
                return AssistantMessage("I don't know you yet: where do you live?")
            profile = json.loads(response.response_data)
            return AssistantMessage(
                f"{profile['name']}, try Jardim, a {profile['diet']} place in {profile['city']}."
            )
        found = INTRO.search(last.text)
        if found:
            name, city, diet = found.groups()
            arguments = json.dumps({"name": name, "city": city, "diet": diet})
            call = ToolCall(id="call_1", name="save_profile", arguments=arguments)
        else:
            call = ToolCall(id="call_1", name="get_profile", arguments="{}")
        return AssistantMessage("", tool_calls=[call])

    return FunctionChatModel(reply)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Long-term memory across threads.")
    parser.add_argument(
        "--live",
        action="store_true",
        help="use a real OpenAI-compatible model (OPENAI_API_KEY, OPENAI_BASE_URL, GRAPH_AGENT_MODEL)",
    )
    parser.add_argument(
        "--redis-url", help="keep the profiles in Redis (default: a MemoryStore in process)"
    )
    return parser.parse_args(argv)


def build(model: ChatModel, store: BaseStore) -> ReactAgent:
    """The concierge, on ``model``, its users' profiles in ``store``."""
    return (
        ReactAgent.builder()
        .name("concierge")
        .model(model)
        .tools(save_profile, get_profile)
        .store(store)
        .system_prompt(
            "You are a concierge. Save what users tell you about themselves with save_profile; "
            "call get_profile before recommending anything."
        )
        .build()
    )


# served: `graph-agent serve examples/long_term_memory.py:agent` (its model: see _models.py)
agent = build(served(offline_model), MemoryStore())


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    store: BaseStore = (
        RedisStore.from_url(args.redis_url, key_prefix="graph_agent-example")
        if args.redis_url
        else MemoryStore()
    )
    agent = build(choose(args, offline_model()), store)
    print(f"store: {type(store).__name__}")
    for thread, user, text in [
        ("monday", "u-ada", "Hi! I'm Ada, I live in Lisbon and I'm vegetarian."),
        ("tuesday", "u-ada", "Can you recommend a restaurant for tonight?"),
        ("wednesday", "u-bob", "Can you recommend a restaurant for tonight?"),
    ]:
        config = RunnableConfig(thread_id=thread, metadata={"user_id": user})
        print(f"== thread '{thread}', user {user}: a new conversation")
        assert agent.get_state(config) is None  # nothing of the other threads in it
        print(f"user: {text}")
        state = agent.invoke(text, config)
        for message in state["messages"]:
            if isinstance(message, ToolResponseMessage):
                for response in message.responses:
                    print(f"  tool {response.name} -> {response.response_data}")
        print(f"assistant: {state['messages'][-1].text}")
    profile = store.get(("profiles", "u-ada"), "profile")
    print(f"store[('profiles', 'u-ada')]['profile'] = {profile.value if profile else None}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
