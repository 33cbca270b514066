"""RedisStore's key layout and atomic writes, on fakeredis and on a real server: ``put`` and
``delete`` are one script call each, so a write cut short at any command leaves the items and
the namespace index in step, and every key of a store shares one hash tag (one cluster slot)
while no two namespaces share a key. ``check_*`` run on the real cluster too
(``test_redis_cluster.py``)."""

from __future__ import annotations

import contextlib
import urllib.parse
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest
import redis
from redis.crc import key_slot

from checkpoint import RedisStore

WRITES = {"HSET", "HDEL", "ZADD", "ZREM", "DEL", "EXISTS", "MULTI", "EXEC"}


@pytest.fixture(params=["redis-fake", "redis-real"])
def redis_store(request: pytest.FixtureRequest) -> Iterator[RedisStore]:
    prefix = f"rs-{uuid.uuid4().hex[:8]}"
    if request.param == "redis-fake":
        yield RedisStore(fakeredis.FakeRedis(), key_prefix=prefix)
        return
    with RedisStore.from_url(request.getfixturevalue("redis_url"), key_prefix=prefix) as store:
        yield store


@contextlib.contextmanager
def sent_commands(client: Any, fail_at: int | None = None) -> Iterator[list[str]]:
    """The names of the commands ``client`` sends meanwhile; the ``fail_at``-th one (from 1)
    raises ``redis.ConnectionError`` before it reaches the server."""
    sent: list[str] = []
    original = client.execute_command

    def execute_command(*args: Any, **options: Any) -> Any:
        sent.append(str(args[0]).upper())
        if len(sent) == fail_at:
            raise redis.ConnectionError("the connection dropped (test)")
        return original(*args, **options)

    client.execute_command = execute_command
    try:
        yield sent
    finally:
        del client.execute_command  # the class's method again


def check_put_and_delete_are_one_script_call_each(store: RedisStore) -> None:
    store.put(("warm",), "k", 1)  # loads the scripts (EVALSHA, SCRIPT LOAD, EVALSHA)
    store.delete(("warm",), "k")
    for ns in [("users", "u1"), ("users", "u1")]:  # a new namespace, then an update
        with sent_commands(store.client) as sent:
            store.put(ns, "profile", {"name": "Ada"})
        assert sent.count("EVALSHA") == 1 and not WRITES & set(sent), sent
    store.put(("users", "u1"), "other", 2)
    for key in ["profile", "other", "missing"]:  # one of two keys, the last one, none
        with sent_commands(store.client) as sent:
            store.delete(("users", "u1"), key)
        assert sent == ["EVALSHA"], sent
    assert store.list_namespaces() == [] and store.get(("users", "u1"), "other") is None


def check_a_write_cut_short_leaves_items_and_index_in_step(store: RedisStore) -> None:
    """Cut a put into a new namespace, and the delete of a namespace's last key, at each
    command in turn: the item is there and its namespace listed, or neither."""

    def in_step(ns: tuple[str, ...]) -> bool:
        return (store.get(ns, "k") is not None) == (ns in store.list_namespaces(limit=1000))

    for write in ["put", "delete"]:
        fail_at = 1
        while True:
            ns = (write, str(fail_at))
            if write == "delete":
                store.put(ns, "k", 1)
            try:
                with sent_commands(store.client, fail_at) as sent:
                    getattr(store, write)(ns, "k", *([1] if write == "put" else []))
            except redis.ConnectionError:
                assert in_step(ns), (write, sent)
                fail_at += 1
                continue
            assert in_step(ns) and len(sent) < fail_at
            break


def test_put_and_delete_are_one_script_call_each(redis_store: RedisStore) -> None:
    check_put_and_delete_are_one_script_call_each(redis_store)


def test_a_write_cut_short_leaves_items_and_index_in_step(redis_store: RedisStore) -> None:
    check_a_write_cut_short_leaves_items_and_index_in_step(redis_store)


def check_one_slot_and_no_shared_keys(store: RedisStore) -> None:
    """Every key of the store is in the index's slot; the namespaces below get a key each."""
    spaces = [("a:b",), ("a", "b"), ("a%3Ab",), ("a",), ("{a}", "b"), ("}", "{"), ("}{",)]
    spaces += [("a\x1fb",), ("a", "\x1fb"), ("namespaces",), ("ns",), ("ns", "ns")]
    for ns in spaces:
        store.put(ns, "k", list(ns))
    keys = [store._key(ns) for ns in spaces]
    assert len(set(keys)) == len(spaces)
    assert {key_slot(k.encode()) for k in [*keys, store._namespaces_key]} == {
        key_slot(store._namespaces_key.encode())
    }
    for ns in spaces:
        item = store.get(ns, "k")
        assert item is not None and item.value == list(ns)
    assert store.list_namespaces(limit=100) == sorted(spaces)


def test_a_stores_keys_share_one_slot_and_namespaces_never_share_a_key(
    redis_store: RedisStore,
) -> None:
    check_one_slot_and_no_shared_keys(redis_store)
    assert redis_store._namespaces_key == "{" + redis_store.key_prefix + ":store}:namespaces"


@pytest.mark.parametrize("prefix", ["a{b}c", "}x", "{}", "x{", "{y}"])
def test_a_key_prefix_with_braces_still_gives_one_slot_of_its_own(
    redis_store: RedisStore, prefix: str
) -> None:
    braced = prefix + redis_store.key_prefix
    store = RedisStore(redis_store.client, key_prefix=braced)
    check_one_slot_and_no_shared_keys(store)
    for other in [redis_store.key_prefix, braced.encode().hex(), "{" + braced.encode().hex()]:
        # the tag hex-encodes the prefix, yet no other prefix lands on the same keys
        assert RedisStore(redis_store.client, key_prefix=other).list_namespaces() == []


def test_items_of_the_old_layout_warn_and_move_with_their_times(redis_store: RedisStore) -> None:
    """Items a graph-agent 0.1 store wrote (``<prefix>:store:<parts>`` hashes and the
    ``<prefix>:store-namespaces`` index) are not lost: the store warns, and
    ``migrate_legacy_keys`` moves them, times and all, once."""
    client, prefix, dumps = redis_store.client, redis_store.key_prefix, redis_store.serializer.dumps
    old = {
        (("users", "u1"), "profile"): {
            "v": {"name": "Ada"},
            "t": [1_700_000_000.0, 1_700_000_100.0],
        },
        (("users", "u1"), "prefs"): {"v": ["tea"], "t": [1_700_000_001.0, 1_700_000_001.0]},
        (("teams", "a b:c"), "lead"): {"v": "Grace", "t": [1_700_000_002.0, 1_700_000_003.0]},
    }
    for (ns, key), record in old.items():
        parts = ":".join(urllib.parse.quote(p, safe="") for p in ns)
        client.hset(f"{prefix}:store:{parts}", key, dumps(record))
        client.zadd(f"{prefix}:store-namespaces", {"\x1f".join(ns): 0})
    with pytest.warns(UserWarning, match="layout of graph-agent 0.1"):
        redis_store.put(("teams", "a b:c"), "lead", "Katherine")  # the new layout's copy wins

    fresh = RedisStore(client, key_prefix=prefix)
    with pytest.warns(UserWarning, match=r"call store.migrate_legacy_keys\(\) once"):
        assert fresh.get(("users", "u1"), "profile") is None  # not read until moved
    assert fresh.migrate_legacy_keys() == 2
    profile = fresh.get(("users", "u1"), "profile")
    assert profile is not None and profile.value == {"name": "Ada"}
    assert (profile.created_at.timestamp(), profile.updated_at.timestamp()) == (
        1_700_000_000.0,
        1_700_000_100.0,
    )
    lead = fresh.get(("teams", "a b:c"), "lead")
    assert lead is not None and lead.value == "Katherine"
    assert fresh.list_namespaces() == [("teams", "a b:c"), ("users", "u1")]
    assert not client.exists(f"{prefix}:store-namespaces", f"{prefix}:store:users:u1")
    assert fresh.migrate_legacy_keys() == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RedisStore(client, key_prefix=prefix).get(("users", "u1"), "prefs")  # no warning now
