"""A store's semantic index, on every backend (``tests/checkpoint/_indexed_stores.py``): the
named fields of each value are embedded on ``put``, ``search(..., query=...)`` finds the
closest first with a ``score``, the filter and the query applied together; a text already
embedded is not embedded again; a store without an index says how to build one."""

from __future__ import annotations

import asyncio
import math

import fakeredis
import pytest

from checkpoint import MemoryStore, RedisStore
from checkpoint.store import HashingEmbeddings, IndexConfig, IndexedStore, as_embeddings

from ._indexed_stores import INDEXED, MakeStore

NOTES = {
    "n1": {"text": "Ada prefers tea in the morning", "kind": "taste"},
    "n2": {"text": "Ada's invoices go to the billing address in Oslo", "kind": "billing"},
    "n3": {"text": "Grace drinks coffee, never tea", "kind": "taste"},
    "n4": {"text": "Shipping to Oslo takes two days", "kind": "shipping"},
}


class CountingEmbeddings(HashingEmbeddings):
    """HashingEmbeddings that count the texts they embed."""

    def __init__(self) -> None:
        super().__init__(dims=64)
        self.embedded: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return super().embed_documents(texts)


@pytest.fixture(params=sorted(INDEXED))
def make_store(request: pytest.FixtureRequest) -> MakeStore:
    """A function ``index -> store`` of one backend (each store it makes is closed after)."""
    return INDEXED[request.param](request)


def notes_store(make_store: MakeStore, embed: object | None = None) -> IndexedStore:
    index: IndexConfig = {"dims": 64, "embed": embed or HashingEmbeddings(64), "fields": ["text"]}
    store = make_store(index)
    for key, value in NOTES.items():
        store.put(("memories", "ada"), key, value)
    return store


def test_a_query_finds_the_closest_first_with_its_score(make_store: MakeStore) -> None:
    store = notes_store(make_store)
    found = store.search(("memories",), query="tea in the morning for Ada", limit=2)
    assert [item.key for item in found] == ["n1", "n3"]
    assert found[0].score is not None and found[1].score is not None
    assert 1.0 >= found[0].score > found[1].score > 0
    plain = store.search(("memories",))  # no query: newest first, no score
    assert [item.key for item in plain] == ["n4", "n3", "n2", "n1"]
    assert all(item.score is None for item in plain)


def test_the_filter_and_the_query_apply_together_and_offset_pages(make_store: MakeStore) -> None:
    store = notes_store(make_store)
    taste = store.search(("memories",), filter={"kind": "taste"}, query="Oslo tea", limit=5)
    assert {item.key for item in taste} == {"n1", "n3"}
    ranked = store.search(("memories",), query="Oslo", limit=4)
    assert store.search(("memories",), query="Oslo", limit=2, offset=2) == ranked[2:]
    assert store.search(("elsewhere",), query="Oslo") == []


def test_items_tied_in_score_are_paged_newest_first_within_limit(make_store: MakeStore) -> None:
    store = make_store({"dims": 64, "embed": HashingEmbeddings(64), "fields": ["text"]})
    for key in ("a", "b", "c"):
        store.put(("m",), key, {"text": "the same words"})
    assert [i.key for i in store.search(("m",), query="the same words", limit=1)] == ["c"]
    paged = store.search(("m",), query="the same words", limit=1, offset=1)
    assert [i.key for i in paged] == ["b"]
    assert [i.key for i in store.search(("m",), query="same", limit=5)] == ["c", "b", "a"]


def test_a_text_already_embedded_is_not_embedded_again(make_store: MakeStore) -> None:
    counting = CountingEmbeddings()
    store = notes_store(make_store, counting)
    assert len(counting.embedded) == 4
    store.put(("memories", "ada"), "n1", dict(NOTES["n1"]))  # the same text again
    store.put(("memories", "bob"), "n1", {"text": NOTES["n1"]["text"], "kind": "other"})
    assert len(counting.embedded) == 4
    store.put(("memories", "ada"), "n1", {"text": "Ada now prefers coffee"})
    assert counting.embedded[-1] == "Ada now prefers coffee"


def test_an_item_put_with_index_false_is_kept_out_of_searches_by_query(
    make_store: MakeStore,
) -> None:
    store = notes_store(make_store)
    store.put(("memories", "ada"), "secret", {"text": "Ada prefers tea"}, index=False)
    found = store.search(("memories",), query="Ada prefers tea", limit=10)
    assert "secret" not in {item.key for item in found}
    assert store.get(("memories", "ada"), "secret") is not None
    assert "secret" in {item.key for item in store.search(("memories",), limit=10)}
    store.put(("memories", "ada"), "named", {"title": "tea", "text": "x"}, index=["title"])
    assert store.search(("memories",), query="tea", limit=1)[0].key in {"named", "n1", "n3"}
    store.delete(("memories", "ada"), "n1")
    assert "n1" not in {i.key for i in store.search(("memories",), query="tea", limit=10)}


def test_the_async_twins_and_an_async_embed_function(make_store: MakeStore) -> None:
    embedder = HashingEmbeddings(32)

    async def embed(texts: list[str]) -> list[list[float]]:
        return embedder.embed_documents(texts)

    async def go() -> list[str]:
        store = make_store({"dims": 32, "embed": embed, "fields": ["text"]})
        for key, value in NOTES.items():
            await store.aput(("m",), key, value)
        return [item.key for item in await store.asearch(("m",), query="coffee tea", limit=2)]

    assert set(asyncio.run(go())) == {"n1", "n3"}
    sync_store = make_store({"dims": 32, "embed": embed})
    with pytest.raises(TypeError, match="is async; use the store's async methods"):
        sync_store.put(("m",), "k", "text")


def test_a_plain_function_embeds_and_wrong_vectors_are_refused(make_store: MakeStore) -> None:
    store = make_store({"dims": 2, "embed": lambda texts: [[1.0, 0.0] for _ in texts]})
    store.put(("m",), "a", "anything")  # "$": the whole value
    (item,) = store.search(("m",), query="x")
    assert item.score == pytest.approx(1.0)
    wrong = make_store({"dims": 3, "embed": lambda texts: [[1.0, 0.0] for _ in texts]})
    with pytest.raises(ValueError, match="2 dimensions, the index's dims is 3"):
        wrong.put(("m",), "a", "text")
    short = make_store({"dims": 2, "embed": lambda texts: []})
    with pytest.raises(ValueError, match="one vector"):
        short.put(("m",), "a", "text")


@pytest.mark.parametrize(
    ("index", "says"),
    [
        ({"embed": HashingEmbeddings()}, "index\\['dims'\\] must be a positive int"),
        ({"dims": 8}, "index needs 'embed'"),
        ({"dims": 8, "embed": HashingEmbeddings(), "fields": "text"}, "list of paths"),
        ({"dims": 8, "embed": HashingEmbeddings(), "size": 3}, "unknown key\\(s\\) \\['size'\\]"),
        ({"dims": 8, "embed": 42}, "embed must be an Embeddings object"),
    ],
)
def test_a_bad_index_is_refused_saying_what_it_takes(
    make_store: MakeStore, index: dict[str, object], says: str
) -> None:
    with pytest.raises((ValueError, TypeError), match=says):
        make_store(index)


def test_a_store_without_an_index_says_how_to_build_one() -> None:
    for store in (MemoryStore(), RedisStore(fakeredis.FakeRedis())):
        with pytest.raises(ValueError, match=r"built without an index.*index=\{'dims'"):
            store.search(("m",), query="tea")


def test_hashing_embeddings_are_deterministic_unit_vectors() -> None:
    embedder = HashingEmbeddings(128)
    one, same = embedder.embed_documents(["Ada likes tea", "Ada likes tea"])
    assert one == same and math.isclose(sum(x * x for x in one), 1.0)
    assert embedder.embed_query("") == [0.0] * 128
    assert as_embeddings(embedder) is embedder
    with pytest.raises(ValueError, match=r"dims=\.\.\.\) takes an int of 8 or more"):
        HashingEmbeddings(4)


def test_without_numpy_a_search_finds_the_same_in_plain_python() -> None:
    """The ``vectors`` extra is optional: in a process where numpy cannot be imported the
    store packs, scores and pages vectors in plain Python, with the same results."""
    import subprocess
    import sys

    program = """
import sys
sys.modules["numpy"] = None  # import numpy fails, as where the extra is not installed
from checkpoint.store import HashingEmbeddings, MemoryStore, _vectors
assert not _vectors.HAVE_NUMPY
store = MemoryStore(index={"dims": 64, "embed": HashingEmbeddings(64), "fields": ["text"]})
notes = NOTES
for key, value in notes.items():
    store.put(("memories", "ada"), key, value)
found = store.search(("memories",), query="tea in the morning for Ada", limit=3)
print([(item.key, round(item.score, 5)) for item in found])
""".replace("NOTES", repr(NOTES))
    plain = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    ).stdout
    store = notes_store(lambda index: MemoryStore(index=index))
    found = store.search(("memories",), query="tea in the morning for Ada", limit=3)
    assert plain.strip() == str([(item.key, round(item.score or 0, 5)) for item in found])


def test_a_search_over_more_vectors_than_the_cache_holds_loses_none() -> None:
    """The process's vector cache is bounded: a search wanting more vectors than it holds
    still scores every candidate (those it let go are read again from the store)."""
    from checkpoint.store._vectors import VectorCache

    store = notes_store(lambda index: MemoryStore(index=index))
    assert store._index is not None
    store._index.cache = VectorCache(64, max_bytes=4 * 64 * 2)  # room for 2 vectors
    found = store.search(("memories",), query="Ada tea Oslo", limit=10)
    assert sorted(item.key for item in found) == ["n1", "n2", "n3", "n4"]
    again = store.search(("memories",), query="Ada tea Oslo", limit=10)  # 2 cached, 2 let go
    assert [i.key for i in again] == [i.key for i in found]
    assert [i.score for i in again] == pytest.approx([i.score for i in found], abs=1e-6)
