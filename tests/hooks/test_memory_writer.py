"""MemoryWriterHook: after each turn the run returns at once, and the turn's memories are
written in the background, in the user's namespace, where a later thread finds them; what a
model or a function extracts adds, updates and deletes memories by key; turns that wait are
folded into the newest; failures are logged and counted, never raised into a run; the
thread's history holds only the conversation."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from checkpoint import Item, MemoryStore
from checkpoint.store import HashingEmbeddings
from graph_agent import (
    AssistantMessage,
    Command,
    ReactAgent,
    RunnableConfig,
    ScriptedChatModel,
    ToolCall,
    UserMessage,
    memory_tools,
    tool,
)
from graph_agent.messages import Message
from hooks import HumanInTheLoopHook, MemoryChange, MemoryWriterHook, PIIHook, ToolFeedback

LOGGER = "graph_agent.hooks.memory"
WAIT = 30  # seconds a test waits for an event before it fails (never reached when green)


def indexed_store() -> MemoryStore:
    return MemoryStore(index={"dims": 256, "embed": HashingEmbeddings(256), "fields": ["content"]})


def config(thread: str, user: str = "ada") -> RunnableConfig:
    return RunnableConfig(thread_id=thread, metadata={"user_id": user})


def agent_with(hook: MemoryWriterHook, *answers: str, store: MemoryStore) -> ReactAgent:
    model = ScriptedChatModel(list(answers))
    return ReactAgent(name="support", model=model, hooks=[hook], store=store)


def contents(store: MemoryStore, user: str = "ada") -> dict[str, str]:
    return {i.key: i.value["content"] for i in store.search(("memories", user), limit=100)}


def said(messages: Sequence[Message]) -> list[str]:
    return [m.text for m in messages if isinstance(m, UserMessage)]


def test_the_run_returns_before_the_extractor_finishes() -> None:
    release, started = threading.Event(), threading.Event()

    def extractor(messages: Sequence[Message], existing: Sequence[Item]) -> list[MemoryChange]:
        started.set()
        assert release.wait(WAIT), "the run waited for the extractor"
        return [MemoryChange("add", "Ada's order A-17 arrived damaged")]

    store = indexed_store()
    hook = MemoryWriterHook(extractor, store=store)
    agent = agent_with(hook, "Sorry to hear that; a new one is on its way.", store=store)
    answer = agent.call("My order A-17 arrived damaged.", config("t1"))
    assert answer.text == "Sorry to hear that; a new one is on its way."
    assert started.wait(WAIT)
    assert contents(store) == {}  # the extractor is still waiting: nothing written yet
    assert hook.stats().pending == 1
    release.set()
    assert hook.flush(WAIT)
    assert list(contents(store).values()) == ["Ada's order A-17 arrived damaged"]
    stats = hook.stats()
    assert (stats.turns, stats.written, stats.changes, stats.failed, stats.pending) == (
        1,
        1,
        1,
        0,
        0,
    )


def test_a_stream_ends_before_the_extractor_finishes() -> None:
    release = threading.Event()

    def extractor(messages: Sequence[Message], existing: Sequence[Item]) -> list[MemoryChange]:
        assert release.wait(WAIT)
        return [MemoryChange("add", "likes tea")]

    store = indexed_store()
    hook = MemoryWriterHook(extractor, store=store)
    agent = agent_with(hook, "Tea it is.", store=store)
    chunks = list(agent.stream_messages("I like tea.", config("t1")))
    assert chunks and contents(store) == {}
    release.set()
    assert hook.flush(WAIT)
    assert list(contents(store).values()) == ["likes tea"]


def test_memories_land_in_each_users_namespace_and_the_history_stays_a_conversation() -> None:
    seen: list[list[str]] = []

    def extractor(messages: Sequence[Message], existing: Sequence[Item]) -> list[dict[str, Any]]:
        seen.append(said(messages))
        return [{"action": "add", "content": f"said: {said(messages)[-1]}"}]

    store = indexed_store()
    hook = MemoryWriterHook(extractor, store=store)
    agent = agent_with(hook, "Hello Ada.", "Hello Bob.", store=store)
    agent.call("I'm Ada.", config("t-ada", "ada"))
    agent.call("I'm Bob.", config("t-bob", "bob"))
    assert hook.flush(WAIT)
    assert list(contents(store, "ada").values()) == ["said: I'm Ada."]
    assert list(contents(store, "bob").values()) == ["said: I'm Bob."]
    state = agent.get_state(config("t-ada"))
    assert state is not None
    assert [(m.message_type, m.text) for m in state.values["messages"]] == [
        ("user", "I'm Ada."),
        ("assistant", "Hello Ada."),
    ]


def test_a_namespace_of_its_own_shared_with_the_memory_tools() -> None:
    store = indexed_store()
    where = ("crm", "{user_id}", "notes")
    hook = MemoryWriterHook(
        lambda m, e: [MemoryChange("add", "VIP customer", key="tier")], store=store, namespace=where
    )
    model = ScriptedChatModel(["Welcome back."])
    agent = ReactAgent(
        name="support", model=model, tools=memory_tools(where), hooks=[hook], store=store
    )
    agent.call("Hi.", config("t1"))
    assert hook.flush(WAIT)
    assert store.get(("crm", "ada", "notes"), "tier") is not None
    assert store.search(("memories",)) == []


def test_the_extractor_updates_and_deletes_by_key_given_the_memories_that_match() -> None:
    store = indexed_store()
    store.put(("memories", "ada"), "city", {"content": "Ada lives in Lisbon"})
    store.put(("memories", "ada"), "phone", {"content": "Ada's phone is 555-0101"})
    store.put(("memories", "bob"), "city", {"content": "Bob lives in Oslo"})
    shown: list[dict[str, str]] = []

    def extractor(messages: Sequence[Message], existing: Sequence[Item]) -> list[MemoryChange]:
        shown.append({i.key: i.value["content"] for i in existing})
        return [
            MemoryChange("update", "Ada lives in Porto", key="city"),
            MemoryChange("delete", key="phone"),
        ]

    hook = MemoryWriterHook(extractor, store=store)
    agent = agent_with(hook, "Noted: Porto, and no phone.", store=store)
    agent.call("I moved from Lisbon to Porto, and I have no phone now.", config("t1"))
    assert hook.flush(WAIT)
    assert shown == [{"city": "Ada lives in Lisbon", "phone": "Ada's phone is 555-0101"}]
    assert contents(store) == {"city": "Ada lives in Porto"}
    assert contents(store, "bob") == {"city": "Bob lives in Oslo"}
    assert hook.stats().changes == 2


def test_a_chat_model_extracts_with_structured_output() -> None:
    store = indexed_store()
    store.put(("memories", "ada"), "plan", {"content": "Ada is on the Basic plan"})
    answer = {
        "changes": [
            {"action": "update", "key": "plan", "content": "Ada is on the Pro plan"},
            {"action": "add", "key": None, "content": "Ada wants invoices in EUR"},
        ]
    }
    extractor = ScriptedChatModel([json.dumps(answer)], supports_native_output=True)
    hook = MemoryWriterHook(extractor, store=store)
    agent = agent_with(hook, "Done: Pro plan, invoices in EUR.", store=store)
    agent.call("Upgrade me to Pro, and bill me in EUR please.", config("t1"))
    assert hook.flush(WAIT)
    assert sorted(contents(store).values()) == [
        "Ada is on the Pro plan",
        "Ada wants invoices in EUR",
    ]
    (prompt,) = extractor.prompts
    asked = prompt.messages[0].text
    assert "plan: Ada is on the Basic plan" in asked
    assert "user: Upgrade me to Pro, and bill me in EUR please." in asked
    assert "assistant: Done: Pro plan, invoices in EUR." in asked
    assert prompt.options is not None and prompt.options.response_format is not None
    assert prompt.options.response_format["json_schema"]["name"] == "memory_changes"


def test_waiting_turns_of_a_thread_fold_into_the_newest_which_sees_them_all() -> None:
    release, started = threading.Event(), threading.Event()
    seen: list[list[str]] = []

    def extractor(messages: Sequence[Message], existing: Sequence[Item]) -> list[MemoryChange]:
        seen.append(said(messages))
        if len(seen) == 1:
            started.set()
            assert release.wait(WAIT)
        return []

    store = indexed_store()
    hook = MemoryWriterHook(extractor, store=store)
    agent = agent_with(hook, "a1", "a2", "a3", store=store)
    agent.call("u1", config("t1"))
    assert started.wait(WAIT)  # turn 1 is being written: turns 2 and 3 wait
    agent.call("u2", config("t1"))
    agent.call("u3", config("t1"))
    assert hook.stats().pending == 2  # turn 1 running, turns 2+3 as one
    release.set()
    assert hook.flush(WAIT)
    assert seen == [["u1"], ["u2", "u3"]]
    stats = hook.stats()
    assert (stats.turns, stats.written, stats.coalesced) == (3, 2, 1)


def test_a_full_backlog_drops_its_oldest_thread_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release, started = threading.Event(), threading.Event()
    seen: list[list[str]] = []

    def extractor(messages: Sequence[Message], existing: Sequence[Item]) -> list[MemoryChange]:
        seen.append(said(messages))
        started.set()
        assert release.wait(WAIT)
        return []

    store = indexed_store()
    hook = MemoryWriterHook(extractor, store=store, max_pending=1)
    agent = agent_with(hook, "a1", "a2", "a3", store=store)
    with caplog.at_level(logging.WARNING, LOGGER):
        agent.call("running", config("t1"))
        assert started.wait(WAIT)
        agent.call("dropped", config("t2"))
        agent.call("kept", config("t3"))
        release.set()
        assert hook.flush(WAIT)
    assert seen == [["running"], ["kept"]]
    assert hook.stats().dropped == 1
    assert "the backlog is full; the turn of thread 't2'" in caplog.text


def test_a_failing_extractor_is_logged_and_counted_and_the_next_turn_still_works(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []

    def extractor(messages: Sequence[Message], existing: Sequence[Item]) -> list[MemoryChange]:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the memory model is down")
        return [MemoryChange("add", "Ada prefers email")]

    store = indexed_store()
    hook = MemoryWriterHook(extractor, store=store)
    agent = agent_with(hook, "a1", "a2", store=store)
    with caplog.at_level(logging.WARNING, LOGGER):
        agent.call("u1", config("t1"))
        assert hook.flush(WAIT)
        assert agent.call("Email me, please.", config("t1")).text == "a2"
        assert hook.flush(WAIT)
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    assert "the memories of thread 't1' (namespace ('memories', 'ada')) were not written" in (
        record.getMessage()
    )
    assert record.exc_info is not None and "the memory model is down" in caplog.text
    assert list(contents(store).values()) == ["Ada prefers email"]
    stats = hook.stats()
    assert (stats.failed, stats.written) == (1, 1)


def test_a_bad_answer_of_the_model_and_a_missing_user_id_are_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = indexed_store()
    hook = MemoryWriterHook(ScriptedChatModel(["I'd remember the tea."]), store=store)
    agent = agent_with(hook, "a1", "a2", store=store)
    with caplog.at_level(logging.WARNING, LOGGER):
        agent.call("I like tea.", config("t1"))
        assert agent.call("Hi.", RunnableConfig(thread_id="t2")).text == "a2"
        assert hook.flush(WAIT)
    assert "the memory model did not answer JSON" in caplog.text
    assert "tea" not in caplog.text  # log lines never carry what was said
    assert "no memories written for thread 't2'" in caplog.text
    assert "RunnableConfig(metadata={'user_id': ...})" in caplog.text
    stats = hook.stats()
    assert (stats.turns, stats.failed, stats.written) == (2, 2, 0)


def test_async_runs_return_first_and_aflush_waits() -> None:
    release = threading.Event()

    async def extractor(
        messages: Sequence[Message], existing: Sequence[Item]
    ) -> list[MemoryChange]:
        await asyncio.sleep(0)
        assert release.wait(WAIT)
        return [MemoryChange("add", f"said {said(messages)[-1]}")]

    store = indexed_store()
    hook = MemoryWriterHook(extractor, store=store)
    agent = agent_with(hook, "a1", store=store)

    async def run() -> None:
        answer = await agent.acall("I like jazz.", config("t1"))
        assert answer.text == "a1"
        assert contents(store) == {}
        assert not await hook.aflush(timeout=0)
        release.set()
        assert await hook.aflush(WAIT)

    asyncio.run(run())
    assert list(contents(store).values()) == ["said I like jazz."]


def test_a_store_without_an_index_shows_the_newest_memories() -> None:
    store = MemoryStore()
    store.put(("memories", "ada"), "old", {"content": "Ada has a cat"})
    extractor = ScriptedChatModel(['{"changes": [{"action": "add", "content": "Ada has a dog"}]}'])
    hook = MemoryWriterHook(extractor, store=store)
    agent = agent_with(hook, "a1", store=store)
    agent.call("I got a dog.", config("t1"))
    assert hook.flush(WAIT)
    assert "old: Ada has a cat" in extractor.prompts[0].messages[0].text
    assert sorted(contents(store).values()) == ["Ada has a cat", "Ada has a dog"]
    assert hook.stats().failed == 0


def test_a_paused_run_is_remembered_once_it_ends() -> None:
    """A run paused for a human has not answered yet: its turn is queued when it ends."""
    seen: list[list[str]] = []

    @tool
    def refund(order: str) -> str:
        """Refund an order."""
        return f"refunded {order}"

    store = indexed_store()
    hook = MemoryWriterHook(lambda m, e: seen.append(said(m)) or [], store=store)
    ask = AssistantMessage(
        "", tool_calls=[ToolCall(id="c1", name="refund", arguments='{"order": "A-17"}')]
    )
    model = ScriptedChatModel([ask, "Refunded."])
    agent = ReactAgent(
        name="support",
        model=model,
        tools=[refund],
        store=store,
        hooks=[HumanInTheLoopHook(["refund"]), hook],
    )
    agent.invoke("Refund A-17, please.", config("t1"))
    assert hook.flush(WAIT) and hook.stats().turns == 0 and seen == []
    agent.call(Command(resume=ToolFeedback.approve()), config("t1"))
    assert hook.flush(WAIT)
    assert seen == [["Refund A-17, please."]]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"extractor": 42}, "takes a ChatModel or a function"),
        ({"store": object()}, "takes a store"),
        ({"namespace": ()}, "takes non-empty strings"),
        ({"max_pending": 0}, "max_pending=...) takes a positive int"),
        ({"existing_limit": True}, "existing_limit=...) takes a positive int"),
        (
            {"extractor": ScriptedChatModel([]), "instructions": "no slots"},
            "must contain {memories}",
        ),
    ],
)
def test_bad_settings_say_what_is_wrong(arguments: dict[str, Any], message: str) -> None:
    settings: dict[str, Any] = {"extractor": lambda m, e: [], "store": MemoryStore(), **arguments}
    with pytest.raises((TypeError, ValueError), match=re.escape(message)):
        MemoryWriterHook(settings.pop("extractor"), **settings)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"action": "add"}, "'add' needs its content"),
        ({"action": "update", "content": "x"}, "'update' needs the key"),
        ({"action": "forget", "key": "k"}, "is 'add', 'update' or 'delete'"),
        ({"action": "delete", "key": "k", "why": "old"}, r"unknown field\(s\) \['why'\]"),
    ],
)
def test_a_bad_change_fails_the_turn_with_a_clear_message(
    change: dict[str, Any], message: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = indexed_store()
    hook = MemoryWriterHook(lambda m, e: [change], store=store)
    agent = agent_with(hook, "a1", store=store)
    with caplog.at_level(logging.WARNING, LOGGER):
        agent.call("u1", config("t1"))
        assert hook.flush(WAIT)
    assert hook.stats().failed == 1
    with pytest.raises(ValueError, match=message):
        MemoryChange.of(change)


def test_the_extractor_reads_the_thread_as_stored_so_what_pii_hook_removed_never_reaches_it() -> (
    None
):
    seen: list[str] = []
    store = indexed_store()
    hook = MemoryWriterHook(lambda m, e: seen.extend(x.text for x in m) or [], store=store)
    guard = PIIHook("email", apply_to_output=True)
    model = ScriptedChatModel(["I will write to ada@example.com."])
    agent = ReactAgent(
        name="support", model=model, store=store, hooks=[guard, hook], interceptors=[guard]
    )
    agent.call("Mail me at ada@example.com.", config("t1"))
    assert hook.flush(WAIT)
    assert seen == ["Mail me at [REDACTED_EMAIL].", "I will write to [REDACTED_EMAIL]."]


def test_a_hook_without_a_store_writes_to_the_agents_and_a_mismatch_is_refused() -> None:
    from graph_agent import AgentBuildError

    def extractor(messages: Sequence[Message], existing: Sequence[Item]) -> list[MemoryChange]:
        return [MemoryChange("add", "Ada prefers email")]

    store = indexed_store()
    hook = MemoryWriterHook(extractor)
    agent_with(hook, "Noted.", store=store).call("Email me, please.", config("t1"))
    assert hook.flush(WAIT)
    assert list(contents(store).values()) == ["Ada prefers email"]  # the agent's store

    with pytest.raises(AgentBuildError, match="has no store to write to: give the agent one"):
        ReactAgent(name="a", model=ScriptedChatModel(["x"]), hooks=[MemoryWriterHook(extractor)])
    other = MemoryWriterHook(extractor, store=MemoryStore())
    with pytest.raises(AgentBuildError, match="but the agent's store is"):
        agent_with(other, "x", store=store)
