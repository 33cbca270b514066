"""Chat memory: the model sees the conversation so far ("what did I just ask?").

``MessageWindowChatMemory`` keeps the last N messages per conversation id; each id is a
separate conversation.

    python examples/chat_memory.py [--live]
"""

from __future__ import annotations

from collections.abc import Sequence

from _models import choose, parse_args, served

from graph_agent import ChatClient, MessageWindowChatMemory, ReactAgent
from graph_agent.messages import AssistantMessage, UserMessage
from graph_agent.models import FunctionChatModel, Prompt


def offline_model() -> FunctionChatModel:
    """Answers "what did I just ask?" from the history it is sent, like an LLM would."""

    def reply(prompt: Prompt) -> AssistantMessage:
        questions = [m.text for m in prompt.messages if isinstance(m, UserMessage)]
        if "just ask" in questions[-1]:
            earlier = questions[-2] if len(questions) > 1 else None
            return AssistantMessage(
                f"You asked: {earlier!r}." if earlier else "You have not asked anything yet."
            )
        return AssistantMessage(f"(answer to {questions[-1]!r})")

    return FunctionChatModel(reply)


# served: `graph-agent serve examples/chat_memory.py:agent` (its model: see _models.py)
agent = ReactAgent(name="memory", model=served(offline_model), system_prompt="Be brief.")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("Chat memory per conversation.", argv)
    memory = MessageWindowChatMemory(max_messages=20)
    client = ChatClient.create(
        choose(args, offline_model()), memory=memory, default_system="Be brief."
    )
    for conversation, text in [
        ("ada", "What is the capital of France?"),
        ("ada", "What did I just ask?"),
        ("bob", "What did I just ask?"),
    ]:
        answer = client.prompt(text).conversation_id(conversation).call().content()
        print(f"[{conversation}] user: {text}\n[{conversation}] assistant: {answer}")
    print(
        f"memory holds {len(memory.get('ada'))} messages for ada, {len(memory.get('bob'))} for bob"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
