"""RedisStore's key layout and atomic writes, on fakeredis and on a real server: ``put`` and
``delete`` are one script call each, so a write cut short at any command leaves the items and
the namespace index in step, and every key of a store shares one hash tag (one cluster slot)
while no two namespaces share a key. ``check_*`` run on the real cluster too
(``test_redis_cluster.py``). The semantic index's own (the rest of it runs on every backend in
``test_store_index.py``), on fakeredis, a real server and the cluster: vectors kept in Redis,
read by another store without embedding again, shared by items with one text and dropped with
the last, in step with their items whatever cuts a write short, a search's round trips
bounded."""

from __future__ import annotations

import contextlib
import urllib.parse
import uuid
import warnings
from collections import Counter
from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest
import redis
from redis.crc import key_slot

from checkpoint import RedisStore
from checkpoint.store import HashingEmbeddings, IndexConfig

from .test_store_index import NOTES, CountingEmbeddings

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
    """The round trips ``client`` makes meanwhile: each command's name, ``PIPELINE`` for a
    pipeline; the ``fail_at``-th one (from 1) raises ``redis.ConnectionError`` before it
    reaches the server."""
    sent: list[str] = []
    original = client.execute_command

    def execute_command(*args: Any, **options: Any) -> Any:
        sent.append(str(args[0]).upper())
        if len(sent) == fail_at:
            raise redis.ConnectionError("the connection dropped (test)")
        return original(*args, **options)

    original_pipeline = client.pipeline

    def pipeline(*args: Any, **options: Any) -> Any:
        pipe = original_pipeline(*args, **options)
        run = pipe.execute

        def execute(*args: Any, **options: Any) -> Any:
            sent.append("PIPELINE")  # one round trip, however many commands
            if len(sent) == fail_at:
                raise redis.ConnectionError("the connection dropped (test)")
            return run(*args, **options)

        pipe.execute = execute
        return pipe

    client.execute_command = execute_command
    client.pipeline = pipeline
    try:
        yield sent
    finally:
        del client.execute_command, client.pipeline  # the class's methods again


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


# -- the semantic index ------------------------------------------------------------------------


@pytest.fixture(params=["redis-fake", "redis-real", "redis-cluster"])
def redis_base(request: pytest.FixtureRequest) -> Iterator[RedisStore]:
    """A store without an index on each kind of Redis: its client and key prefix are shared
    by the indexed stores a test makes (``indexed``), as other processes would."""
    prefix = f"rx-{uuid.uuid4().hex[:8]}"
    if request.param == "redis-fake":
        yield RedisStore(fakeredis.FakeRedis(), key_prefix=prefix)
        return
    if request.param == "redis-real":
        url, cluster = request.getfixturevalue("redis_url"), False
    else:
        url, cluster = request.getfixturevalue("cluster_url"), True
    with RedisStore.from_url(url, cluster=cluster, key_prefix=prefix) as store:
        yield store


def indexed(base: RedisStore, embed: Any = None) -> RedisStore:
    """A new store on ``base``'s client and prefix, with an index and nothing cached (what
    another process would have)."""
    index: IndexConfig = {"dims": 64, "embed": embed or HashingEmbeddings(64), "fields": ["text"]}
    return RedisStore(base.client, key_prefix=base.key_prefix, index=index)


def store_keys(store: RedisStore) -> set[str]:
    return {k.decode() for k in store.client.scan_iter(match=store._tag + "*")}


def kinds(keys: set[str], store: RedisStore) -> set[str]:
    """What the keys are after the store's tag: ``ns``, ``namespaces``, ``digests`` ..."""
    return {k.removeprefix(store._tag + ":").split(":")[0] for k in keys}


def keys_of(found: list[Any]) -> list[str]:
    return [item.key for item in found]


def test_another_store_searches_by_query_without_embedding_again(redis_base: RedisStore) -> None:
    """The vectors live in Redis: a store with nothing cached (another process) finds by
    query what the first put, with the same scores, and embeds no text already stored."""
    first = indexed(redis_base)
    for key, value in NOTES.items():
        first.put(("memories", "ada"), key, value)
    expected = first.search(("memories",), query="tea in the morning for Ada", limit=3)

    counting = CountingEmbeddings()
    second = indexed(redis_base, counting)
    found = second.search(("memories",), query="tea in the morning for Ada", limit=3)
    assert keys_of(found) == ["n1", "n3", keys_of(expected)[2]] and found == expected
    second.put(("memories", "bob"), "tea", {"text": NOTES["n1"]["text"]})  # a text stored
    assert counting.embedded == []
    assert keys_of(second.search(("memories",), query=NOTES["n1"]["text"], limit=2)) in (
        ["n1", "tea"],
        ["tea", "n1"],
    )
    assert keys_of(redis_base.search(("memories",), limit=10)) == ["tea", "n4", "n3", "n2", "n1"]


def test_another_model_or_dims_embeds_again_instead_of_mixing_vectors(
    redis_base: RedisStore,
) -> None:
    """Vectors are kept by the embedder's model, its dims and the text: a store of another
    model (or dims) on the same data embeds its texts anew, never reads the other's vectors."""
    first = indexed(redis_base)
    first.put(("memories", "ada"), "n1", NOTES["n1"])

    class OtherModel(CountingEmbeddings):
        model = "another-model"

    other = OtherModel()
    second = indexed(redis_base, other)
    second.put(("memories", "ada"), "n1", NOTES["n1"])
    assert other.embedded == [NOTES["n1"]["text"]]
    wider: IndexConfig = {"dims": 128, "embed": HashingEmbeddings(128), "fields": ["text"]}
    third = RedisStore(redis_base.client, key_prefix=redis_base.key_prefix, index=wider)
    third.put(("memories", "ada"), "n1", NOTES["n1"])  # no "stored vector has 64 dimensions"
    (found,) = third.search(("memories",), query=NOTES["n1"]["text"], limit=1)
    assert found.key == "n1" and found.score == pytest.approx(1.0, abs=1e-5)


def test_a_vector_lives_while_an_item_uses_it(redis_base: RedisStore) -> None:
    """Items with the same text share one vector, which goes with the last of them; an item
    put again with ``index=False``, or without the indexed field, drops its vector; once every
    item is deleted the store leaves no key behind."""
    store = indexed(redis_base)
    vectors = store._vectors_key
    store.put(("a",), "k1", {"text": "green tea"})
    store.put(("b",), "k2", {"text": "green tea"})
    assert store.client.hlen(vectors) == 1
    store.put(("a",), "k1", {"text": "black coffee"})  # k2 still uses the tea vector
    assert store.client.hlen(vectors) == 2
    store.delete(("b",), "k2")  # the tea vector goes with its last item
    assert store.client.hlen(vectors) == 1
    assert keys_of(indexed(redis_base).search((), query="green tea")) == ["k1"]
    store.put(("a",), "k1", {"text": "black coffee"}, index=False)
    assert store.client.hlen(vectors) == 0 and indexed(redis_base).search((), query="x") == []
    store.put(("a",), "k2", {"text": "water"})
    store.put(("a",), "k2", {"title": "no text"})  # nothing to embed: the old vector goes
    assert indexed(redis_base).search((), query="water") == []
    assert len(store.search((), limit=10)) == 2  # both still found without a query
    store.delete(("a",), "k1")
    store.delete(("a",), "k2")
    assert store_keys(store) == set()


def vectors_in_step(store: RedisStore) -> None:
    """Every digest an item names has its vector, and a count of the items naming it; no
    other vector is kept; every item with digests has its record."""
    client, used = store.client, Counter[str]()
    for key in client.scan_iter(match=store._tag + ":digests:*"):
        records = store._key(()) + key.decode().split(":digests:", 1)[1]
        digests = client.hgetall(key)
        assert digests and all(client.hexists(records, k) for k in digests), key
        for joined in digests.values():
            used.update(joined[i : i + 32].decode() for i in range(0, len(joined), 32))
    refs = {k.decode(): int(v) for k, v in client.hgetall(store._tag + ":refs").items()}
    assert refs == dict(used)
    assert {k.decode() for k in client.hkeys(store._vectors_key)} == set(used)


def test_an_indexed_write_cut_short_leaves_items_and_vectors_in_step(
    redis_base: RedisStore,
) -> None:
    """Cut each write at each round trip in turn (the vectors read, the record read, the
    script): the write happened whole or not at all, every vector kept is one an item uses,
    and the item is found by its text iff it is there with that text indexed."""
    tea, coffee = {"text": "green tea"}, {"text": "black coffee"}
    Write = tuple[list[tuple[str, Any, bool]], str, Any, bool, "str | None"]
    writes: dict[str, Write] = {
        # name: (the items before, the write of "k", its value and index, the text indexed after)
        "new": ([], "put", tea, True, "green tea"),
        "new text": ([("k", tea, True), ("other", tea, True)], "put", coffee, True, "black coffee"),
        "index=False": ([("k", tea, True)], "put", tea, False, None),
        "delete": ([("k", tea, True), ("other", tea, True)], "delete", None, True, None),
    }
    for name, (before, write, value, index, after) in writes.items():
        old = next((v for key, v, _ in before if key == "k"), None)
        fail_at = 1
        while True:
            ns = (name, str(fail_at))
            for key, earlier, earlier_index in before:
                indexed(redis_base).put(ns, key, earlier, index=earlier_index)
            store = indexed(redis_base)  # nothing cached: its put reads the stored vectors
            args = (value,) if write == "put" else ()
            try:
                with sent_commands(store.client, fail_at) as sent:
                    getattr(store, write)(ns, "k", *args, **({} if index else {"index": False}))
                done = True
            except redis.ConnectionError:
                done = False
            # reads (the old layout's check, vectors, the old record), then the script
            assert set(sent) <= {"EXISTS", "PIPELINE", "HGET", "EVALSHA", "SCRIPT LOAD"}, sent
            item = store.get(ns, "k")
            assert (item.value if item else None) == (value if done else old), (name, sent)
            vectors_in_step(store)
            now = after if done else (old or {}).get("text")  # the text indexed now
            probe = now or (value or old or tea)["text"]
            found = indexed(redis_base).search(ns, query=probe, limit=10)
            hits = [i.key for i in found if i.key == "k" and (i.score or 0) > 0.999]
            assert bool(hits) == (now is not None), (name, sent, now, keys_of(found))
            if done:
                assert len(sent) < fail_at, (name, sent)
                break
            fail_at += 1
        assert fail_at >= 2, (name, sent)  # cut at least once


def test_an_embed_that_fails_leaves_the_item_and_its_vectors_as_they_were(
    redis_base: RedisStore,
) -> None:
    store = indexed(redis_base)
    store.put(("m",), "k", {"text": "green tea"})

    def broken(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("the embeddings service is down")

    failing = indexed(redis_base, broken)
    with pytest.raises(RuntimeError, match="service is down"):
        failing.put(("m",), "k", {"text": "black coffee"})
    item = store.get(("m",), "k")
    assert item is not None and item.value == {"text": "green tea"}
    assert keys_of(indexed(redis_base).search(("m",), query="green tea")) == ["k"]
    vectors_in_step(store)


def test_an_indexed_stores_keys_share_one_slot(redis_base: RedisStore) -> None:
    store = indexed(redis_base)
    for ns in [("users", "u1"), ("users", "u2"), ("a:b", "{c}"), ("}{",)]:
        store.put(ns, "k", {"text": f"about {ns}"})
    keys = store_keys(store)
    assert kinds(keys, store) == {"digests", "vectors", "refs", "ns", "namespaces"}
    assert {key_slot(k.encode()) for k in keys} == {key_slot(store._namespaces_key.encode())}
    assert len(store.search(("users",), query="about users", limit=10)) == 2


def test_a_search_takes_the_same_round_trips_for_10_or_300_items(redis_base: RedisStore) -> None:
    """A search by query reads the namespaces, then their records and digests in one
    pipeline, then (the first time only) the vectors in one more: never a trip per item."""
    trips = []
    for count in (10, 300):
        writer = indexed(redis_base)
        for n in range(count):
            writer.put(("size", str(count), f"ns{n % 3}"), f"k{n}", {"text": f"note {n}", "n": n})
        reader = indexed(redis_base)
        with sent_commands(reader.client) as cold:
            found = reader.search(("size", str(count)), query="note 7", limit=1)
        with sent_commands(reader.client) as warm:  # every vector read: none read again
            assert reader.search(("size", str(count)), filter={"n": 7}, query="note 7") == found
        trips.append((cold, warm))
        assert [(i.key, round(i.score or 0, 5)) for i in found] == [("k7", 1.0)]
    (cold, warm), _ = trips
    assert trips[0] == trips[1] and len(cold) == 4  # the first: the check of the old layout
    assert cold[1:] == ["ZRANGEBYLEX", "PIPELINE", "PIPELINE"] and warm == cold[1:3]


def test_a_store_without_an_index_puts_and_searches_as_before(redis_base: RedisStore) -> None:
    """No index: a put is one read and one script, a search one read of the namespaces and
    one pipeline of their hashes (however many), and no index key is written."""
    redis_base.put(("u", "0"), "k", 0)  # the check of the old layout, the script loaded
    with sent_commands(redis_base.client) as sent:
        redis_base.put(("u", "1"), "k", {"text": "tea"})
    assert sent == ["HGET", "EVALSHA"]
    for n in range(2, 5):
        redis_base.put(("u", str(n)), "k", n)
    with sent_commands(redis_base.client) as sent:
        assert len(redis_base.search(("u",), limit=10)) == 5
    assert sent == ["ZRANGEBYLEX", "PIPELINE"]
    assert kinds(store_keys(redis_base), redis_base) == {"ns", "namespaces"}
