"""``memory_tools()``: an agent saves what it learns in its store, in a namespace made from
the run's config (per user), and finds it again by meaning on another thread; it updates and
forgets by key; what it needs and lacks (a store, a user id, an index) it is told plainly."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

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


def calls(name: str, **arguments: Any) -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=[ToolCall(id=f"c-{name}", name=name, arguments=json.dumps(arguments))]
    )


def answers(model: ScriptedChatModel) -> list[str]:
    """What the tools answered, call by call, in the prompts the model was sent."""
    found = []
    for prompt in model.prompts:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            found.extend(str(r.response_data) for r in last.responses)
    return found


def indexed_store() -> MemoryStore:
    return MemoryStore(index={"dims": 256, "embed": HashingEmbeddings(256), "fields": ["content"]})


def test_a_customer_is_remembered_across_threads_and_kept_apart_from_others() -> None:
    store = indexed_store()
    model = ScriptedChatModel(
        [
            calls("save_memory", content="Ada prefers email, never phone calls"),
            "Noted.",
            calls("search_memories", query="how does Ada like to be contacted"),
            "I will email you.",
            calls("search_memories", query="how does Ada like to be contacted"),
            "I have nothing on that.",
        ]
    )
    agent = ReactAgent(name="support", model=model, tools=memory_tools(), store=store)
    ada = {"user_id": "ada"}
    agent.call("Please email me, no calls.", RunnableConfig(thread_id="t1", metadata=ada))
    agent.call("How should you reach me?", RunnableConfig(thread_id="t2", metadata=ada))
    agent.call("And me?", RunnableConfig(thread_id="t3", metadata={"user_id": "bob"}))
    saved, found, other = answers(model)
    assert saved.startswith("saved as ")
    key = saved.removeprefix("saved as ")
    assert found == f"{key}: Ada prefers email, never phone calls"
    assert other == "nothing remembered about that"
    assert [i.key for i in store.search(("memories", "ada"))] == [key]


def test_a_memory_is_replaced_by_key_and_forgotten() -> None:
    store = indexed_store()
    save, search, delete = memory_tools(("people", "{user_id}", "{thread_id}"))
    model = ScriptedChatModel(
        [
            calls("save_memory", content="lives in Oslo", key="city"),
            calls("save_memory", content="lives in Bergen", key="city"),
            calls("search_memories", query="where does she live"),
            calls("delete_memory", key="city"),
            calls("delete_memory", key="city"),
            "Done.",
        ]
    )
    agent = ReactAgent(name="a", model=model, tools=[save, search, delete], store=store)
    asyncio.run(agent.acall("go", RunnableConfig(thread_id="t", metadata={"user_id": "ada"})))
    assert answers(model) == [
        "saved as city",
        "saved as city",
        "city: lives in Bergen",
        "forgot city",
        "no memory has the key city",
    ]
    assert store.search(("people", "ada", "t")) == []


@pytest.mark.parametrize(
    ("store", "metadata", "says"),
    [
        (None, {"user_id": "ada"}, "this agent has no store to keep memories in"),
        (indexed_store(), {}, "names ['user_id'], which this run does not give"),
        (MemoryStore(), {"user_id": "ada"}, "built without an index"),
    ],
)
def test_what_is_missing_is_said_to_the_model(
    store: Any, metadata: dict[str, str], says: str
) -> None:
    model = ScriptedChatModel([calls("search_memories", query="anything"), "ok"])
    agent = ReactAgent(name="a", model=model, tools=memory_tools(), store=store)
    agent.call("go", RunnableConfig(thread_id="t", metadata=metadata))
    (answer,) = answers(model)
    assert says in answer


def test_bad_options_are_refused_at_once() -> None:
    with pytest.raises(ValueError, match="takes non-empty strings"):
        memory_tools(("memories", ""))
    with pytest.raises(ValueError, match=r"search_limit=\.\.\.\) takes a positive int"):
        memory_tools(search_limit=0)
