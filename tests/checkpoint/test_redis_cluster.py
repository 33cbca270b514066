"""RedisSaver and RedisStore on a real three-node Redis Cluster (``tests/redis_servers.py``).

The session fixture ``cluster_ports`` (tests/conftest.py) starts three ``redis-server --cluster-enabled yes`` nodes on free loopback
ports, joins them with ``redis-cli --cluster create ... --cluster-yes`` and waits for
``cluster_state:ok`` on every node. Without a server binary or redis-cli the tests are skipped
with the reason; on CI (``CI`` set) that is a failure instead.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
import redis.asyncio

from checkpoint import (
    BaseCheckpointSaver,
    CheckpointConflictError,
    CheckpointDelta,
    RedisSaver,
    RedisStore,
)
from graph_agent import (
    END,
    START,
    AssistantMessage,
    KeyStrategy,
    ReactAgent,
    ScriptedChatModel,
    StateGraph,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    tool,
)

from . import test_history as history
from . import test_redis_store as store_layout
from . import test_saver_contract as saver_contract
from . import test_store as store_contract

# Thread ids whose hash tags land in different slots, served by all three nodes of a cluster
# made by ``redis-cli --cluster create`` (slots split 0-5460, 5461-10922, 10923-16383):
# alice 749, bob 8955, carol 6206, erin 12069.
THREADS = ("alice", "bob", "carol", "erin")


@pytest.fixture
def cluster(cluster_ports: list[int]) -> Iterator[redis.RedisCluster]:
    client = redis.RedisCluster(host="127.0.0.1", port=cluster_ports[0])
    try:
        yield client
    finally:
        client.close()


def _prefix(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def _keyslot(client: redis.RedisCluster, key: str) -> int:
    return int(client.execute_command("CLUSTER KEYSLOT", key))


def test_the_cluster_is_up_on_three_nodes(cluster, cluster_ports):
    nodes = cluster.get_primaries()
    assert sorted(n.port for n in nodes) == sorted(cluster_ports)
    for node in nodes:
        info = cluster.cluster_info(target_nodes=node)
        assert info["cluster_state"] == "ok" and int(info["cluster_known_nodes"]) == 3


# -- the saver contract on the cluster -----------------------------------------------------------

CONTRACT: list[Callable[[BaseCheckpointSaver], None]] = [
    saver_contract.test_put_get_roundtrip_with_deltas,
    saver_contract.test_put_without_delta_stores_full_values,
    saver_contract.test_list_newest_first_with_limit_and_before,
    saver_contract.test_head_check_refuses_a_stale_writer_and_writes_nothing,
    saver_contract.test_fork_moves_the_head_without_check,
    saver_contract.test_replaced_append_key_resets_the_list,
    saver_contract.test_delete_thread,
    saver_contract.test_one_step_may_write_thousands_of_keys,
    history.test_every_listed_checkpoint_is_the_one_get_reads,
    history.test_forks_list_as_written,
    history.test_changing_a_listed_checkpoint_changes_nothing_else,
    history.test_a_listing_decodes_each_stored_item_once,
]


@pytest.mark.parametrize(
    "check", CONTRACT, ids=[c.__name__.removeprefix("test_") for c in CONTRACT]
)
def test_saver_contract_on_the_cluster(cluster, check):
    check(RedisSaver(cluster, key_prefix=_prefix("contract")))


def test_saver_async_twins_on_the_cluster(cluster_url):
    """put/get/list/fork/conflict/delete through the asyncio RedisCluster client."""
    saver = RedisSaver.from_url(cluster_url, cluster=True, key_prefix=_prefix("async-twins"))
    make = saver_contract.make

    async def main() -> None:
        try:
            root = make("t", None, 0, {"log": ["a"], "n": 1})
            await saver.aput(root, CheckpointDelta(appended={"log": ["a"]}, replaced={"n": 1}))
            child = make("t", root.id, 1, {"log": ["a", "b"], "n": 2})
            await saver.aput(child, CheckpointDelta(appended={"log": ["b"]}, replaced={"n": 2}))
            stale = make("t", root.id, 1, {"log": ["a", "x"], "n": 9})
            with pytest.raises(CheckpointConflictError):
                await saver.aput(stale, CheckpointDelta(appended={"log": ["x"]}, replaced={"n": 9}))
            latest = await saver.aget("t")
            assert latest is not None and latest.id == child.id
            assert dict(latest.values) == {"log": ["a", "b"], "n": 2}
            fork = make("t", root.id, 1, {"log": ["a", "y"], "n": 3})
            await saver.aput(
                fork, CheckpointDelta(appended={"log": ["y"]}, replaced={"n": 3}), check_head=False
            )
            assert list((await saver.aget("t")).values["log"]) == ["a", "y"]
            assert list((await saver.aget("t", child.id)).values["log"]) == ["a", "b"]
            assert [c.id async for c in saver.alist("t")] == [fork.id, child.id, root.id]
            assert [c.id async for c in saver.alist("t", limit=1)] == [fork.id]
            await saver.adelete_thread("t")
            assert await saver.aget("t") is None
        finally:
            await saver.async_client.aclose()
            saver.client.close()

    asyncio.run(main())


def test_a_threads_seven_keys_share_one_slot_and_threads_spread_over_the_nodes(cluster):
    saver = RedisSaver(cluster, key_prefix=_prefix("slots"))
    for thread in THREADS:
        saver.put(saver_contract.make(thread, None, 0, {"messages": [thread], "n": 1}))
    slots = {}
    for thread in THREADS:
        keys = saver.keys(thread)
        thread_slots = {_keyslot(cluster, key) for key in keys}
        assert len(thread_slots) == 1, f"{thread}'s keys are in slots {thread_slots}"
        slots[thread] = thread_slots.pop()
        assert cluster.exists(*keys) == 7  # one slot: a multi-key command is allowed
    assert len(set(slots.values())) == len(THREADS), slots
    owners = {cluster.get_node_from_key(saver.keys(t)[0]).port for t in THREADS}
    assert len(owners) == 3, f"the threads {slots} should be spread over all three nodes"


# -- an agent, multi-turn, on threads in different slots ------------------------------------------


@tool
def lookup(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


def _call(city: str, call_id: str) -> AssistantMessage:
    return AssistantMessage(
        "",
        tool_calls=[ToolCall(id=call_id, name="lookup", arguments=json.dumps({"city": city}))],
    )


def test_an_agent_runs_multi_turn_on_threads_in_different_slots(cluster, cluster_url):
    prefix = _prefix("agent")
    turns = 3
    # Turns run thread after thread, so the script is the same on every run: per turn and
    # thread, a tool call and then the answer (which names the turn, the thread and the tool
    # result the model saw).
    script: list[AssistantMessage | str] = []
    for turn in range(turns):
        for thread in THREADS:
            script += [
                _call(f"{thread}-city-{turn}", f"{thread}-{turn}"),
                f"{thread} answer {turn}",
            ]
    model = ScriptedChatModel(script)
    for turn in range(turns):
        # A fresh saver and client on every turn: a stateless worker, the thread is in Redis.
        saver = RedisSaver.from_url(cluster_url, cluster=True, key_prefix=prefix)
        agent = ReactAgent(name="weather", model=model, tools=[lookup], saver=saver)
        try:
            for thread in THREADS:
                answer = agent.call(f"{thread} asks {turn}", {"thread_id": thread})
                assert answer.text == f"{thread} answer {turn}"
        finally:
            saver.client.close()
    assert model.remaining == 0

    saver = RedisSaver(cluster, key_prefix=prefix)
    agent = ReactAgent(name="weather", model=model, tools=[lookup], saver=saver)
    slots = {}
    for thread in THREADS:
        state = agent.get_state({"thread_id": thread})
        assert state is not None and state.next == ()
        messages = state.values["messages"]
        expected: list[tuple[type, str]] = []
        for turn in range(turns):
            expected += [
                (UserMessage, f"{thread} asks {turn}"),
                (AssistantMessage, ""),
                (ToolResponseMessage, f"sunny in {thread}-city-{turn}"),
                (AssistantMessage, f"{thread} answer {turn}"),
            ]
        got = [
            (
                type(m),
                m.responses[0].response_data if isinstance(m, ToolResponseMessage) else m.text,
            )
            for m in messages
        ]
        assert got == expected
        # each thread's keys live in the slot of its own hash tag, on the node that owns it
        keys = saver.keys(thread)
        slots[thread] = {_keyslot(cluster, key) for key in keys}
        assert len(slots[thread]) == 1
        owner = cluster.get_node_from_key(keys[0])
        direct = redis.Redis(host=owner.host, port=owner.port)
        try:
            assert direct.exists(*keys) == 7
        finally:
            direct.close()
    assert len({min(s) for s in slots.values()}) == len(THREADS), slots
    # each model call saw its own thread's whole conversation so far, and nothing else:
    # calls ran per turn, per thread, two per turn (asking for the tool, then answering)
    assert len(model.prompts) == turns * len(THREADS) * 2
    for index, prompt in enumerate(model.prompts):
        turn, rest = divmod(index, len(THREADS) * 2)
        thread, second = THREADS[rest // 2], rest % 2
        users = [m.text for m in prompt.messages if isinstance(m, UserMessage)]
        assert users == [f"{thread} asks {t}" for t in range(turn + 1)]
        assert len(prompt.messages) == 4 * turn + 1 + 2 * second


# -- RedisStore on the cluster ---------------------------------------------------------------------

STORE_CONTRACT: list[Callable[[Any], None]] = [
    store_contract.test_put_get_update_delete,
    store_contract.test_search_by_prefix_and_filter_newest_first,
    store_contract.test_list_namespaces,
    store_contract.test_awkward_namespace_parts_and_bad_namespaces,
    store_contract.test_async_twins,
    store_contract.test_one_thread_saves_a_profile_another_reads_it,
    store_contract.test_any_string_round_trips_in_namespaces_and_keys,
    store_layout.check_put_and_delete_are_one_script_call_each,
    store_layout.check_a_write_cut_short_leaves_items_and_index_in_step,
    store_layout.check_one_slot_and_no_shared_keys,
]


@pytest.mark.parametrize(
    "check", STORE_CONTRACT, ids=[c.__name__.removeprefix("test_") for c in STORE_CONTRACT]
)
def test_store_contract_on_the_cluster(cluster, check):
    check(RedisStore(cluster, key_prefix=_prefix("store")))


def test_a_stores_keys_share_one_slot_and_stores_spread_over_the_cluster(cluster, cluster_ports):
    store = RedisStore(cluster, key_prefix=_prefix("spread"))
    users = [f"u{i}" for i in range(12)]
    for user in users:
        store.put(("users", user), "profile", {"name": user})
    slots = {_keyslot(cluster, store._key(("users", user))) for user in users}
    # one hash tag: put/delete are one script
    assert slots == {_keyslot(cluster, store._namespaces_key)}
    stores = [RedisStore(cluster, key_prefix=f"spread-{i}") for i in range(12)]
    owners = {cluster.get_node_from_key(s._namespaces_key).port for s in stores}
    assert len(owners) > 1  # stores with other prefixes land on other nodes
    assert len(store.search(("users",), limit=100)) == len(users)
    assert store.list_namespaces(prefix=("users",)) == sorted(("users", u) for u in users)
    # a store made from a URL finds the same items through another client
    other = RedisStore.from_url(
        f"redis://127.0.0.1:{cluster_ports[-1]}", cluster=True, key_prefix=store.key_prefix
    )
    try:
        assert other.get(("users", "u7"), "profile").value == {"name": "u7"}
    finally:
        other.client.close()


# -- the asyncio cluster client --------------------------------------------------------------------


def test_async_agents_on_the_async_cluster_client(cluster, cluster_url):
    prefix = _prefix("async")
    turns = 2
    script: list[AssistantMessage | str] = []
    for turn in range(turns):
        for thread in THREADS:
            script += [_call(f"{thread}-{turn}", f"{thread}-{turn}"), f"{thread} async {turn}"]
    model = ScriptedChatModel(script)

    async def main() -> None:
        saver = RedisSaver.from_url(cluster_url, cluster=True, key_prefix=prefix)
        assert isinstance(saver.async_client, redis.asyncio.RedisCluster)
        agent = ReactAgent(name="weather", model=model, tools=[lookup], saver=saver)
        try:
            for turn in range(turns):
                for thread in THREADS:
                    state = await agent.ainvoke(f"{thread} asks {turn}", {"thread_id": thread})
                    assert state["messages"][-1].text == f"{thread} async {turn}"
            history = [c async for c in saver.alist("alice")]
            assert len(history) == 4 * turns  # input, model, tools, model per turn
            assert history[0].values == (await saver.aget("alice")).values
            # several threads at once on one async client, each on its own slot
            states = await asyncio.gather(
                *(agent.aget_state({"thread_id": thread}) for thread in THREADS)
            )
            for thread, state in zip(THREADS, states):
                assert state is not None and len(state.values["messages"]) == 4 * turns
                assert state.values["messages"][0].text == f"{thread} asks 0"
            await saver.adelete_thread("erin")
            assert await saver.aget("erin") is None
        finally:
            await saver.async_client.aclose()
            saver.client.close()

    asyncio.run(main())
    # the sync client of another saver sees what the async one wrote
    saver = RedisSaver(cluster, key_prefix=prefix)
    assert [m.text for m in saver.get("alice").values["messages"]][-1] == "alice async 1"
    assert saver.get("erin") is None


def test_concurrent_async_runs_on_many_threads(cluster_url):
    """Twenty threads run at once through one new async RedisCluster client (a graph with an
    APPEND key); every thread ends with exactly its own messages. (Before RedisSaver loaded
    the slot map first, redis-py's concurrent first commands failed here: see
    ``RedisSaver._aready``.)"""
    prefix = _prefix("gather")

    async def reply(state: Any) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"messages": [f"re: {state['messages'][-1]}"]}

    async def main() -> dict[str, list[str]]:
        saver = RedisSaver.from_url(cluster_url, cluster=True, key_prefix=prefix)
        graph = StateGraph(key_strategies={"messages": KeyStrategy.APPEND})
        graph.add_node("reply", reply)
        graph.add_edge(START, "reply").add_edge("reply", END)
        app = graph.compile(saver=saver)
        threads = [f"g{i}" for i in range(20)]
        try:
            for turn in range(3):
                await asyncio.gather(
                    *(app.ainvoke({"messages": [f"{t} {turn}"]}, {"thread_id": t}) for t in threads)
                )
            return {t: list((await saver.aget(t)).values["messages"]) for t in threads}
        finally:
            await saver.async_client.aclose()
            saver.client.close()

    for thread, messages in asyncio.run(main()).items():
        assert messages == [
            m for turn in range(3) for m in (f"{thread} {turn}", f"re: {thread} {turn}")
        ]
