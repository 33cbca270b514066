"""The Store contract (MemoryStore, RedisStore on fakeredis and on a real server), and long-term
memory across an agent's threads."""

from __future__ import annotations

import asyncio
import json
import uuid

import fakeredis
import pytest

from checkpoint import BaseStore, MemoryStore, RedisStore, SqliteStore
from graph_agent import AssistantMessage, ReactAgent, ScriptedChatModel, ToolCall, ToolContext, tool

STORES = {
    "memory": lambda request: MemoryStore(),
    "redis-fake": lambda request: RedisStore(fakeredis.FakeRedis()),
    "sqlite": lambda request: _closed_at_end(
        request, SqliteStore(request.getfixturevalue("tmp_path") / "store.db")
    ),
    "redis-real": lambda request: RedisStore.from_url(
        request.getfixturevalue("redis_url"), key_prefix=f"s-{uuid.uuid4().hex[:8]}"
    ),
}


def _closed_at_end(request: pytest.FixtureRequest, store: SqliteStore) -> SqliteStore:
    request.addfinalizer(store.close)
    return store


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest) -> BaseStore:
    return STORES[request.param](request)


def test_put_get_update_delete(store):
    store.put(("users", "u1"), "profile", {"name": "Ada", "lang": "en"})
    item = store.get(("users", "u1"), "profile")
    assert item.value == {"name": "Ada", "lang": "en"} and item.namespace == ("users", "u1")
    store.put(("users", "u1"), "profile", {"name": "Ada L.", "lang": "en"})
    updated = store.get(("users", "u1"), "profile")
    assert updated.value["name"] == "Ada L." and updated.created_at == item.created_at
    assert updated.updated_at >= item.updated_at
    store.delete(("users", "u1"), "profile")
    assert store.get(("users", "u1"), "profile") is None
    store.delete(("users", "nobody"), "x")  # no error


def test_search_by_prefix_and_filter_newest_first(store):
    store.put(("users", "u1"), "profile", {"role": "admin", "name": "Ada"})
    store.put(("users", "u2"), "profile", {"role": "user", "name": "Bob"})
    store.put(("teams", "t1"), "profile", {"role": "admin", "name": "Core"})
    found = store.search(("users",))
    assert [i.value["name"] for i in found] == ["Bob", "Ada"]
    assert [i.value["name"] for i in store.search(("users",), filter={"role": "admin"})] == ["Ada"]
    assert len(store.search((), filter={"role": "admin"})) == 2
    assert len(store.search(("users",), limit=1)) == 1 and store.search(("users",), offset=2) == []


def test_list_namespaces(store):
    for ns in [("users", "u1"), ("users", "u2"), ("teams", "t1", "docs")]:
        store.put(ns, "k", 1)
    assert store.list_namespaces() == [("teams", "t1", "docs"), ("users", "u1"), ("users", "u2")]
    assert store.list_namespaces(prefix=("users",)) == [("users", "u1"), ("users", "u2")]
    assert store.list_namespaces(max_depth=1) == [("teams",), ("users",)]
    store.delete(("users", "u1"), "k")
    assert ("users", "u1") not in store.list_namespaces()


def test_awkward_namespace_parts_and_bad_namespaces(store):
    store.put(("users", "山田"), "k", 1)
    store.put(("users", "Ωmega"), "k", 2)
    assert {i.namespace for i in store.search(("users",))} == {
        ("users", "山田"),
        ("users", "Ωmega"),
    }
    assert store.list_namespaces(prefix=("users",)) == [("users", "Ωmega"), ("users", "山田")]
    store.put(("a:b", "c/d", "é"), "k", [1, 2])
    assert store.get(("a:b", "c/d", "é"), "k").value == [1, 2]
    with pytest.raises(ValueError, match="tuple of non-empty strings"):
        store.put(("users", ""), "k", 1)


# Strings that break a naive encoding: the index's separator and escape characters (and the
# escape forms themselves), the key name's ':' and percent signs, cluster hash-tag braces,
# 0xff (the bound of a prefix range), non-ASCII text and a lone surrogate.
AWKWARD = [
    "\x1f",
    "\x1e",
    "\x1d",
    "a\x1fb",
    "a\x1eb",
    "\x1e\x1f",
    "\x1e\x1e",
    "\x1e\x1d",
    "\x1f\x1e",
    ":",
    "a:b",
    "%3A",
    "{",
    "}",
    "{a}",
    "}{",
    "\xff",
    "ÿ\x1f",
    "山田",
    "é",
    "\ud800",
]
AWKWARD_SPACES = sorted(
    {(p,) for p in AWKWARD}
    | {("a", p) for p in AWKWARD}
    | {(p, "b") for p in AWKWARD}
    | {("a",), ("b",), ("a", "b"), ("a", "b", "c"), ("a", "b\x1fc"), ("a\x1fb", "c")}
)


def test_any_string_round_trips_in_namespaces_and_keys(store):
    keys = ["", *AWKWARD]
    written = {}
    for i, ns in enumerate(AWKWARD_SPACES):
        for j, key in enumerate((keys[i % len(keys)], keys[(i + 7) % len(keys)])):
            store.put(ns, key, [i, j])  # (a value must serialize: no lone surrogate in it)
            written[ns, key] = [i, j]
    for (ns, key), value in written.items():
        item = store.get(ns, key)
        assert (item.namespace, item.key, item.value) == (ns, key, value)
    assert store.list_namespaces(limit=1000) == AWKWARD_SPACES
    for prefix in [(), *AWKWARD_SPACES]:
        under = [ns for ns in AWKWARD_SPACES if ns[: len(prefix)] == prefix]
        assert store.list_namespaces(prefix=prefix, limit=1000) == under, prefix
        found = {(i.namespace, i.key): i.value for i in store.search(prefix, limit=1000)}
        assert found == {(ns, k): v for (ns, k), v in written.items() if ns in under}, prefix
    for ns, key in written:
        store.delete(ns, key)
        assert store.get(ns, key) is None
    assert store.list_namespaces(limit=1000) == [] and store.search((), limit=1000) == []


def test_async_twins(store):
    async def main():
        await store.aput(("n",), "k", {"v": 1})
        item = await store.aget(("n",), "k")
        found = await store.asearch(("n",))
        spaces = await store.alist_namespaces()
        await store.adelete(("n",), "k")
        return item.value, len(found), spaces, await store.aget(("n",), "k")

    assert asyncio.run(main()) == ({"v": 1}, 1, [("n",)], None)


def test_one_thread_saves_a_profile_another_reads_it(store):
    @tool
    def save_profile(name: str, city: str, context: ToolContext) -> str:
        """Remember the user's profile."""
        user = context.config.metadata["user_id"]
        context.store.put(("profiles", user), "profile", {"name": name, "city": city})
        return "saved"

    @tool
    def load_profile(context: ToolContext) -> str:
        """Recall the user's profile."""
        item = context.store.get(("profiles", context.config.metadata["user_id"]), "profile")
        return json.dumps(item.value if item else None)

    def call(tool_name: str, **args: str) -> AssistantMessage:
        return AssistantMessage(
            "", tool_calls=[ToolCall(id="c1", name=tool_name, arguments=json.dumps(args))]
        )

    model = ScriptedChatModel(
        [
            call("save_profile", name="Ada", city="Lisbon"),
            "Noted.",
            call("load_profile"),
            "You are Ada from Lisbon.",
        ]
    )
    agent = ReactAgent(name="memory", model=model, tools=[save_profile, load_profile], store=store)
    agent.call("I'm Ada from Lisbon", {"thread_id": "monday", "metadata": {"user_id": "u42"}})
    answer = agent.call("Who am I?", {"thread_id": "tuesday", "metadata": {"user_id": "u42"}})
    assert answer.text == "You are Ada from Lisbon."
    assert (
        model.prompts[3].messages[-1].responses[0].response_data
        == '{"name": "Ada", "city": "Lisbon"}'
    )
    assert len(model.prompts[2].messages) == 1  # the other thread shares no messages
