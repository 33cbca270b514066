"""What is SqliteStore's own (the Store contract and the index tests run on it elsewhere):
other processes share the file and its vectors, a vector lives while an item uses it, a
failed put writes nothing, a file it cannot use says why, and closing is clean."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from checkpoint import CheckpointError, CheckpointPathError, SqliteSaver, SqliteStore
from checkpoint.errors import UnserializableValueError
from checkpoint.store import HashingEmbeddings, MemoryStore

from .test_store_index import CountingEmbeddings as Counting

NOTES = {
    "n1": {"text": "Ada prefers tea in the morning", "kind": "taste"},
    "n2": {"text": "Ada's invoices go to the billing address in Oslo", "kind": "billing"},
    "n3": {"text": "Grace drinks coffee, never tea", "kind": "taste"},
}


def index(embed: Any = None) -> dict[str, Any]:
    return {"dims": 64, "embed": embed or HashingEmbeddings(64), "fields": ["text"]}


def keys(found: list[Any]) -> list[str]:
    return [item.key for item in found]


OTHER_PROCESS = """
import json, sys
from checkpoint import SqliteStore
from checkpoint.store import HashingEmbeddings

class Counting(HashingEmbeddings):
    documents = 0
    def embed_documents(self, texts):
        Counting.documents += len(texts)
        return super().embed_documents(texts)

embed = Counting(64)
with SqliteStore(sys.argv[1], index={"dims": 64, "embed": embed, "fields": ["text"]}) as store:
    found = store.search(("memories",), query="tea in the morning for Ada", limit=2)
    taste = store.search(("memories",), query="tea", filter={"kind": "taste"}, limit=5)
    store.put(("memories", "grace"), "n4", {"text": "Grace takes green tea at night", "kind": "taste"})
    store.delete(("memories", "ada"), "n3")
    moved = {"text": "Ada's invoices go to the billing address in Oslo", "kind": "moved"}
    store.put(("memories", "ada"), "n2", moved)  # the same text: its vector is in the file
    print(json.dumps({"found": [i.key for i in found], "taste": sorted(i.key for i in taste),
                      "embedded": Counting.documents}))
"""


def test_another_process_searches_the_file_without_embedding_again(tmp_path: Path) -> None:
    import json

    path = tmp_path / "store.db"
    counting = Counting()
    with SqliteStore(path, index=index(counting)) as store:
        for key, value in NOTES.items():
            store.put(("memories", "ada"), key, value)
        before = keys(store.search(("memories",), query="tea", limit=5))
        assert set(before) == {"n1", "n2", "n3"}
        run = subprocess.run(
            [sys.executable, "-c", OTHER_PROCESS, str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
        seen = json.loads(run.stdout)
        # the vectors were read from the file: only the other process's new text was embedded
        assert seen == {"found": ["n1", "n3"], "taste": ["n1", "n3"], "embedded": 1}
        # and this store sees what the other process wrote and deleted
        after = store.search(("memories",), query="green tea at night", limit=5)
        assert keys(after)[0] == "n4" and "n3" not in keys(after)
        assert store.get(("memories", "grace"), "n4") is not None
        (n2,) = store.search(("memories",), query="Oslo", filter={"kind": "moved"})
        assert n2.key == "n2" and n2.value["kind"] == "moved"
        assert store.search(("memories",), query="Oslo", filter={"kind": "billing"}) == []
        assert store.list_namespaces() == [("memories", "ada"), ("memories", "grace")]
        assert len(counting.embedded) == 3


def test_a_vector_lives_while_an_item_uses_it(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    shared = {"text": "Ada prefers tea in the morning"}

    def embedded_by_a_new_store(text: str) -> int:
        """How many texts a store that never saw ``text`` embeds to put it."""
        counting = Counting()
        with SqliteStore(path, index=index(counting)) as fresh:
            fresh.put(("probe",), "p", {"text": text})
            fresh.delete(("probe",), "p")
        return len(counting.embedded)

    def vectors_in_file() -> int:
        with sqlite3.connect(path) as db:
            (count,) = db.execute("SELECT count(*) FROM store_vectors").fetchone()
        db.close()
        return int(count)

    with SqliteStore(path, index=index()) as store:
        store.put(("a",), "k1", shared)
        store.put(("b",), "k2", dict(shared))  # the same text: one vector, used twice
        assert vectors_in_file() == 1
        store.delete(("a",), "k1")
        assert embedded_by_a_new_store(shared["text"]) == 0  # k2 still uses it
        store.put(("b",), "k2", {"text": "Ada now prefers coffee"})  # changed: not used
        assert vectors_in_file() == 1
        assert embedded_by_a_new_store(shared["text"]) == 1  # gone with its last item
        store.put(("b",), "k2", {"text": "Ada now prefers coffee"}, index=False)
        assert vectors_in_file() == 0
        assert store.search(("b",), query="coffee") == []


def test_a_put_that_fails_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    failing = {"on": False}

    def embed(texts: list[str]) -> list[list[float]]:
        if failing["on"]:
            raise RuntimeError("the embeddings service is down")
        return HashingEmbeddings(64).embed_documents(texts)

    with SqliteStore(path, index=index(embed)) as store:
        store.put(("m",), "k", {"text": "tea in the morning"})
        failing["on"] = True
        with pytest.raises(RuntimeError, match="service is down"):
            store.put(("m",), "k", {"text": "coffee at night"})
        with pytest.raises(RuntimeError, match="service is down"):
            store.put(("m",), "new", {"text": "something new"})
        failing["on"] = False
        with pytest.raises(UnserializableValueError, match="object"):
            store.put(("m",), "k", {"text": "coffee at night", "when": object()})
        # a write that fails inside its transaction (after the item's row) is rolled back
        with sqlite3.connect(path) as db:
            db.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON store_vectors "
                "BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
            )
        db.close()
        with pytest.raises(CheckpointError, match=r"store\.db.*disk says no"):
            store.put(("m",), "k", {"text": "juice at noon"})
        item = store.get(("m",), "k")
        assert item is not None and item.value == {"text": "tea in the morning"}
        assert store.get(("m",), "new") is None
        (found,) = store.search(("m",), query="coffee juice tea")
        assert found.value == {"text": "tea in the morning"}
    with sqlite3.connect(path) as db:
        db.execute("DROP TRIGGER refuse")
    db.close()
    counting = Counting()
    with SqliteStore(path, index=index(counting)) as fresh:  # none of the new texts was kept
        fresh.put(("probe",), "p", {"text": "coffee at night"}, index=["text"])
        assert counting.embedded == ["coffee at night"]


def test_what_a_search_returns_is_the_callers_own(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "store.db", index=index()) as store:
        for key, value in NOTES.items():
            store.put(("memories",), key, value)
        (first,) = store.search(("memories",), query="tea in the morning", limit=1)
        first.value["kind"] = "changed by the caller"
        (again,) = store.search(("memories",), query="tea in the morning", limit=1)
        assert again.value == NOTES["n1"]
        assert keys(store.search(("memories",), query="tea", filter={"kind": "changed"})) == []


def test_a_file_it_cannot_use_says_why(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database, just some bytes" * 100)
    with pytest.raises(CheckpointError, match=r"garbage\.db.*not a SQLite store database"):
        SqliteStore(garbage)

    newer = tmp_path / "newer.db"
    SqliteStore(newer).close()
    with sqlite3.connect(newer) as db:
        db.execute("UPDATE store_meta SET value = 99 WHERE name = 'schema'")
    db.close()
    with pytest.raises(CheckpointError, match=r"newer\.db.*newer version \(schema 99;"):
        SqliteStore(newer)

    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE store_items (id INTEGER PRIMARY KEY, payload TEXT)")
    db.close()
    with pytest.raises(CheckpointError, match=r"something other than a SqliteStore"):
        SqliteStore(foreign)

    with pytest.raises(CheckpointPathError, match="SqliteStore cannot create"):
        SqliteStore(tmp_path / "missing" / "store.db")
    with pytest.raises(ValueError, match="cache_items"):
        SqliteStore(tmp_path / "x.db", cache_items=-1)


def test_a_saver_and_a_store_share_one_file(tmp_path: Path) -> None:
    from checkpoint import Checkpoint, created_at_of, new_checkpoint_id

    path = tmp_path / "app.db"
    with SqliteSaver(path) as saver, SqliteStore(path, index=index()) as store:
        store.put(("users", "u1"), "profile", {"text": "Ada from Oslo"})
        cid = new_checkpoint_id()
        saver.put(Checkpoint(cid, "t1", None, 0, (), {"n": 1}, created_at_of(cid)))
        found = saver.get("t1")
        assert found is not None and found.values == {"n": 1}
        assert keys(store.search(("users",), query="Oslo")) == ["profile"]


def test_closing_is_clean_and_a_closed_store_says_so(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with SqliteStore(path) as store:
        store.put(("m",), "k", 1)
    store.close()  # twice: nothing happens
    with pytest.raises(CheckpointError, match=r"is closed.*open a new SqliteStore"):
        store.get(("m",), "k")

    async def main() -> Any:
        async with SqliteStore(path) as opened:
            return (await opened.aget(("m",), "k")).value  # type: ignore[union-attr]

    assert asyncio.run(main()) == 1
    with SqliteStore.from_conn_string(":memory:") as memory:
        memory.put(("m",), "k", 2)
        assert memory.search(("m",))[0].value == 2

    leaked = SqliteStore(path)
    with pytest.warns(ResourceWarning, match=r"unclosed SqliteStore\(.*store\.db"):
        del leaked  # dropped without close(): reported, and its connection closed
        gc.collect()


@pytest.mark.parametrize("cache_items", [100_000, 0, 3])
def test_searches_find_what_a_memory_store_finds(tmp_path: Path, cache_items: int) -> None:
    """The filter is applied to decoded values (a string field is first looked for in the
    stored bytes): the same pages as MemoryStore, with and without a query, whether the
    store holds its items decoded (all, none, or too many to hold)."""
    values: list[Any] = [
        {"kind": "taste", "text": "tea"},
        {"kind": "taste", "n": 1, "text": "green tea"},
        {"kind": "tasteful", "text": "tea set"},  # a longer string that starts the same
        {"inner": {"kind": "taste"}, "text": "nested: not a match"},
        {"kind": 1, "text": "an int"},
        {"kind": 1.0, "n": True, "text": "a float equal to 1, and True"},
        {"kind": ["taste"], "text": "a list"},
        ["kind", "taste"],
        "kind taste",
        {"kind": "taste", "n": 2, "text": "black tea"},
    ]
    memory = MemoryStore(index=index())
    with SqliteStore(tmp_path / "store.db", index=index(), cache_items=cache_items) as store:
        store.search((), query="tea")  # the held items, if any, are patched from here on
        for at, value in enumerate(values):
            for each in (memory, store):
                each.put(("m", str(at % 3)), f"k{at}", value)
        filters: list[dict[str, Any] | None] = [
            None,
            {"kind": "taste"},
            {"kind": "taste", "n": 2},
            {"kind": 1},
            {"n": 1},
            {"kind": ["taste"]},
            {"missing": "x"},
        ]
        for where in filters:
            for prefix in [(), ("m",), ("m", "1")]:
                for limit, offset in [(10, 0), (2, 1), (1, 3), (0, 0)]:
                    plain = [
                        (i.namespace, i.key) for i in memory.search(prefix, where, limit, offset)
                    ]
                    assert [
                        (i.namespace, i.key) for i in store.search(prefix, where, limit, offset)
                    ] == plain, (where, prefix, limit, offset)
                    by_query = [
                        (i.key, round(i.score or 0, 5))
                        for i in memory.search(prefix, where, limit, offset, query="tea")
                    ]
                    found = store.search(prefix, where, limit, offset, query="tea")
                    assert [(i.key, round(i.score or 0, 5)) for i in found] == by_query


def test_threads_share_a_store(tmp_path: Path) -> None:
    import threading

    with SqliteStore(tmp_path / "store.db", index=index()) as store:
        start = threading.Barrier(4)

        def work(worker: int) -> None:
            start.wait()
            for n in range(25):
                store.put(("w", str(worker)), f"k{n}", {"text": f"note {n} of worker {worker}"})
                store.search(("w",), query=f"note {n}", limit=3)
            store.delete(("w", str(worker)), "k0")

        threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(store.search(("w",), limit=1000)) == 4 * 24
        assert len(store.search(("w",), query="note", limit=1000)) == 4 * 24
        assert store.list_namespaces() == [("w", str(w)) for w in range(4)]
