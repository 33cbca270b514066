"""A support agent that remembers a customer across threads.

The agent keeps what it learns in a store that outlives threads, under the customer's
namespace ``("memories", user_id)`` (``user_id`` from the run's ``config.metadata``), in two
ways:

- in the conversation, with ``memory_tools()``: it saves what the customer asks it to
  remember (``save_memory``) and looks up what it knows (``search_memories``, a search by
  meaning through the store's index);
- after each turn, in the background, with ``MemoryWriterHook``: a model reads the turn and
  the memories that match it, and adds, updates or deletes memories. The answer never waits
  for it; ``hook.flush()`` waits for the writes (here, so that the next thread sees them).

Thread 1: Ada reports a Wi-Fi problem and asks to be emailed; the agent saves her contact
preference and the hook adds her account and the open issue. Thread 2 (new, empty, same
``user_id``): the agent searches by meaning, finds her issue and preference and uses them;
the hook updates the issue. Thread 3: another customer, whose search finds nothing.

Offline, both models are scripted (``ScriptedChatModel``); what the store finds and the
memories it keeps are computed. The index embeds with ``HashingEmbeddings`` (no model,
no key: texts sharing words score higher); a real embedder finds synonyms too.

    python examples/support_memory.py [--live]
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from _models import choose, parse_args, served

from checkpoint import MemoryStore
from checkpoint.store import HashingEmbeddings
from graph_agent import (
    AssistantMessage,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    ToolCall,
    ToolResponseMessage,
    memory_tools,
)
from graph_agent.models import ChatModel
from hooks import MemoryWriterHook

QUERY = "Wi-Fi router problem and how to contact the customer"

TURNS = [  # (thread, user_id, what the customer says)
    (
        "t-monday",
        "cust-ada",
        "Hi, I'm Ada Lovelace, account AC-1001. My router keeps dropping the Wi-Fi. "
        "Please reach me by email: I never pick up the phone.",
    ),
    ("t-friday", "cust-ada", "The Wi-Fi dropped again. Can you help?"),
    ("t-bob", "cust-bob", "The Wi-Fi dropped again. Can you help?"),
]


def _call(name: str, **arguments: str) -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=[ToolCall(id=f"call-{name}", name=name, arguments=json.dumps(arguments))]
    )


def support_model() -> ScriptedChatModel:
    """The agent's answers, turn by turn: a tool call, then the answer."""
    return ScriptedChatModel(
        [
            _call(
                "save_memory",
                content="Ada wants to be contacted by email, never by phone",
                key="contact",
            ),
            "Thanks, Ada! I noted that you prefer email. Please restart the router; if the "
            "Wi-Fi drops again, tell me and I will open a ticket.",
            _call("search_memories", query=QUERY),
            "Sorry, Ada! Your Wi-Fi issue on account AC-1001 is still open, so I opened "
            "ticket T-1 and will email you the next steps, as you prefer.",
            _call("search_memories", query=QUERY),
            "I am sorry to hear that. I have nothing on file for you yet: what is your "
            "account number, and how should we contact you?",
        ]
    )


def _changes(*changes: tuple[str, str | None, str | None]) -> str:
    return json.dumps({"changes": [{"action": a, "key": k, "content": c} for a, k, c in changes]})


def memory_model() -> ScriptedChatModel:
    """The memory writer's answers, one per turn: the changes to make (JSON)."""
    return ScriptedChatModel(
        [
            _changes(
                ("add", "account", "Ada Lovelace, account AC-1001"),
                ("add", "issue", "Ada's router keeps dropping the Wi-Fi; restart suggested"),
            ),
            _changes(
                ("update", "issue", "Ada's router keeps dropping the Wi-Fi; ticket T-1 open"),
            ),
            _changes(),
        ],
        supports_native_output=True,
    )


def indexed_store() -> MemoryStore:
    """Memories kept as ``{"content": ...}`` (as ``memory_tools()`` keeps them), their
    content embedded for searches by meaning."""
    return MemoryStore(index={"dims": 256, "embed": HashingEmbeddings(256), "fields": ["content"]})


def build(model: ChatModel, writer: MemoryWriterHook, store: MemoryStore) -> ReactAgent:
    """The support agent on ``model``, its memories in ``store``, written by ``writer`` too."""
    return (
        ReactAgent.builder()
        .name("support")
        .model(model)
        .tools(*memory_tools())  # in ("memories", user_id), as the hook's
        .hooks(writer)
        .store(store)
        .system_prompt(
            "You are a support agent. Search your memories of the customer before you help; "
            "save what they ask you to remember."
        )
        .build()
    )


def _served() -> ReactAgent:
    store = indexed_store()
    return build(served(support_model), MemoryWriterHook(served(memory_model)), store)


# served: `graph-agent serve examples/support_memory.py:agent` (its model: see _models.py)
agent = _served()


def _memories(store: MemoryStore, user: str) -> list[str]:
    found = store.search(("memories", user), limit=10)
    return [f"{item.key}: {item.value['content']}" for item in sorted(found, key=lambda i: i.key)]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("A support agent that remembers a customer across threads.", argv)
    store = indexed_store()
    model = choose(args, support_model())
    writer = MemoryWriterHook(model if args.live else memory_model())  # writes to the agent's store
    support = build(model, writer, store)
    for thread, user, text in TURNS:
        config = RunnableConfig(thread_id=thread, metadata={"user_id": user})
        print(f"== thread '{thread}', user {user}: a new conversation")
        print(f"customer: {text}")
        state = support.invoke(text, config)
        for message in state["messages"]:
            if isinstance(message, ToolResponseMessage):
                for response in message.responses:
                    lines = str(response.response_data).splitlines()
                    print(f"  tool {response.name} -> {lines[0]}")
                    for line in lines[1:]:
                        print(f"  {' ' * len(response.name)}         {line}")
        print(f"agent: {state['messages'][-1].text}")
        # the answer did not wait for the memory writer; the next thread should see its work
        writer.flush(timeout=60)
        print(f"  memories of {user} now:")
        for line in _memories(store, user) or ["(none)"]:
            print(f"    {line}")
    for query in ("is my Wi-Fi ticket still open?", "email or phone?", "which account number?"):
        best = store.search(("memories", "cust-ada"), query=query, limit=1)
        print(f"search {query!r} -> {best[0].key if best else '(nothing)'}")
    stats = writer.stats()
    print(
        f"memory writer: {stats.turns} turns, {stats.written} written, {stats.changes} "
        f"changes, {stats.failed} failed"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
