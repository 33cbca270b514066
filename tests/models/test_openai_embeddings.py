"""OpenAIEmbeddings against the local HTTP server of test_servers.py, answering as OpenAI's
``/v1/embeddings`` does (``_embeddings_api.EmbeddingsAPI``: its rules, deterministic vectors
listed out of order, failures on demand), sync and async: vectors in input order, batching, retries,
errors, the key kept secret, closing, and a MemoryStore searching by meaning with it. Real
sockets on loopback; no network, no API key."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from checkpoint.store import Embeddings, HashingEmbeddings, MemoryStore
from graph_agent.errors import ModelError
from graph_agent.models.embeddings import OpenAIEmbeddings

from ._embeddings_api import EmbeddingsAPI
from .test_openai_resilience import KEY as REAL_KEY
from .test_openai_resilience import where_the_key_shows
from .test_servers import KEY, MODES, Replayer, Reply

TEXTS = ["the cat sat on the mat", "dogs chase cats", "stock prices fell today"]


@pytest.fixture
def server() -> Iterator[Replayer]:
    replayer = Replayer()
    yield replayer
    replayer.close()


def serve(server: Replayer, api: EmbeddingsAPI | None = None) -> EmbeddingsAPI:
    api = api or EmbeddingsAPI()
    server.reply = Reply(b"", check=api)
    return api


class Waits(list[float]):
    """The waits a client asked for, sync or async."""

    async def asleep(self, seconds: float) -> None:
        self.append(seconds)


def client(server: Replayer, waits: Waits | None = None, **settings: Any) -> OpenAIEmbeddings:
    waits = waits if waits is not None else Waits()
    settings.setdefault("api_key", KEY)
    return OpenAIEmbeddings(
        settings.pop("model", "text-embedding-3-small"),
        f"{server.url}/v1",
        sleep=waits.append,
        async_sleep=waits.asleep,
        **settings,
    )


def embed(embeddings: OpenAIEmbeddings, texts: list[str], asynchronous: bool) -> list[list[float]]:
    """``embed_documents`` or ``aembed_documents``; the client is closed after."""

    async def run() -> list[list[float]]:
        async with embeddings:
            return await embeddings.aembed_documents(texts)

    if asynchronous:
        return asyncio.run(run())
    with embeddings:
        return embeddings.embed_documents(texts)


def failure(embeddings: OpenAIEmbeddings, texts: list[str], asynchronous: bool) -> ModelError:
    try:
        embed(embeddings, texts, asynchronous)
    except ModelError as error:
        return error
    raise AssertionError("no ModelError")


def expected(texts: list[str], dims: int = 1536) -> list[list[float]]:
    return HashingEmbeddings(dims).embed_documents(texts)


# --- vectors, in order ---------------------------------------------------------------------


@pytest.mark.parametrize("asynchronous", MODES)
def test_each_text_gets_its_vector_in_input_order(server: Replayer, asynchronous: bool) -> None:
    serve(server)  # lists the vectors last input first
    vectors = embed(client(server), TEXTS, asynchronous)
    assert vectors == expected(TEXTS)
    sent = server.requests[0]
    assert sent.path == "/v1/embeddings"
    assert sent.headers["Authorization"] == f"Bearer {KEY}"
    assert sent.body == {
        "model": "text-embedding-3-small",
        "input": TEXTS,
        "encoding_format": "float",
    }


@pytest.mark.parametrize("asynchronous", MODES)
def test_a_query_is_one_text(server: Replayer, asynchronous: bool) -> None:
    serve(server)
    embeddings = client(server, dimensions=64)

    async def run() -> list[float]:
        async with embeddings:
            return await embeddings.aembed_query("cats")

    with embeddings:
        vector = asyncio.run(run()) if asynchronous else embeddings.embed_query("cats")
    assert vector == expected(["cats"], 64)[0]
    assert server.requests[0].body["input"] == ["cats"] and len(server.requests) == 1


@pytest.mark.parametrize("asynchronous", MODES)
def test_base64_vectors_arrive_as_floats(server: Replayer, asynchronous: bool) -> None:
    serve(server)
    vectors = embed(client(server, encoding_format="base64"), TEXTS, asynchronous)
    assert server.requests[0].body["encoding_format"] == "base64"
    for got, want in zip(vectors, expected(TEXTS), strict=True):
        assert len(got) == 1536 and all(isinstance(x, float) for x in got)
        assert all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-7) for a, b in zip(got, want))


def test_dimensions_are_asked_for_and_checked(server: Replayer) -> None:
    serve(server)
    vectors = embed(client(server, dimensions=256), TEXTS, False)
    assert server.requests[0].body["dimensions"] == 256
    assert [len(v) for v in vectors] == [256, 256, 256]


@pytest.mark.parametrize("asynchronous", MODES)
def test_a_model_that_takes_no_dimensions_is_quoted(server: Replayer, asynchronous: bool) -> None:
    serve(server)
    embeddings = client(server, model="text-embedding-ada-002", dimensions=256, max_retries=2)
    error = failure(embeddings, TEXTS, asynchronous)
    assert error.status == 400 and len(server.requests) == 1  # a 400 is not retried
    assert str(error) == (
        f"HTTP 400 from POST {server.url}/v1/embeddings: This model does not support "
        "specifying dimensions. (invalid_request_error)"
    )


def test_a_server_that_ignores_dimensions_is_an_error(server: Replayer) -> None:
    vector = {"object": "embedding", "index": 0, "embedding": [0.5] * 12}
    body = {"object": "list", "data": [vector], "model": "m"}
    server.reply = Reply(httpx.Response(200, json=body).content, "application/json")
    with pytest.raises(ModelError, match=r"vectors of \[12\] dimensions, not the 8 asked for"):
        embed(client(server, dimensions=8), ["a"], False)


@pytest.mark.parametrize("asynchronous", MODES)
def test_no_texts_no_request(server: Replayer, asynchronous: bool) -> None:
    serve(server)
    assert embed(client(server), [], asynchronous) == []
    assert server.requests == []


def test_extra_fields_and_headers_go_with_every_request(server: Replayer) -> None:
    serve(server)
    embeddings = client(
        server,
        dimensions=8,
        batch_size=2,
        extra_body={"user": "u-1"},
        extra_headers={"X-Team": "a"},
    )
    embed(embeddings, TEXTS, False)
    assert len(server.requests) == 2
    for sent in server.requests:
        assert sent.body["user"] == "u-1" and sent.body["dimensions"] == 8
        assert sent.headers["X-Team"] == "a"


def test_an_azure_deployment_url_keeps_its_query_and_key_header(server: Replayer) -> None:
    serve(server, EmbeddingsAPI(key=None))
    embeddings = OpenAIEmbeddings(
        "text-embedding-3-small",
        f"{server.url}/openai/deployments/emb?api-version=2024-10-21",
        REAL_KEY,
        api_key_header="api-key",
    )
    assert embed(embeddings, TEXTS, False) == expected(TEXTS)
    sent = server.requests[0]
    assert sent.path == "/openai/deployments/emb/embeddings?api-version=2024-10-21"
    assert sent.headers["api-key"] == REAL_KEY and "Authorization" not in sent.headers


# --- batching ------------------------------------------------------------------------------


@pytest.mark.parametrize("asynchronous", MODES)
def test_at_most_2048_texts_go_in_one_request(server: Replayer, asynchronous: bool) -> None:
    api = serve(server)
    texts = [f"memory number {n}" for n in range(5000)]
    vectors = embed(client(server, dimensions=8), texts, asynchronous)
    assert sorted(len(sent) for sent in api.inputs) == [904, 2048, 2048]
    assert vectors == [v[:8] for v in expected(texts, 8)]  # every text's own, in order


@pytest.mark.parametrize("asynchronous", MODES)
def test_batch_size_and_characters_per_request_cut_the_requests(
    server: Replayer, asynchronous: bool
) -> None:
    api = serve(server)
    texts = ["aaaa", "bbbb", "cccc", "x" * 50, "dddd", "eeee", "ffff", "gggg"]
    embeddings = client(server, dimensions=8, batch_size=3, max_chars_per_request=10)
    vectors = embed(embeddings, texts, asynchronous)
    # 10 characters hold two 4-letter texts; the 50-character text goes alone
    assert sorted(api.inputs) == sorted(
        [["aaaa", "bbbb"], ["cccc"], ["x" * 50], ["dddd", "eeee"], ["ffff", "gggg"]]
    )
    assert vectors == [v[:8] for v in expected(texts, 8)]


class Gate(httpx.AsyncBaseTransport):
    """A transport that holds every request until ``together`` are in flight (10 s at most),
    counting the most in flight at once. The tasks of one call start in one turn of the loop,
    so every request the client lets out at once is counted before any is answered."""

    def __init__(self, together: int) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.together = together
        self.full = asyncio.Event()
        self.at_once = self.most_at_once = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.at_once += 1
        self.most_at_once = max(self.most_at_once, self.at_once)
        if self.at_once >= self.together:
            self.full.set()
        try:
            await asyncio.wait_for(self.full.wait(), 10)
            return await self.inner.handle_async_request(request)
        finally:
            self.at_once -= 1

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.parametrize("limit", [2, 3])
def test_the_async_twin_sends_up_to_max_concurrency_requests_at_once(
    server: Replayer, limit: int
) -> None:
    api = serve(server)
    texts = [f"text {n}" for n in range(12)]

    async def run() -> tuple[list[list[float]], int]:
        gate = Gate(together=limit)
        async with httpx.AsyncClient(transport=gate) as held:
            embeddings = client(
                server, dimensions=8, batch_size=2, max_concurrency=limit, async_http_client=held
            )
            return await embeddings.aembed_documents(texts), gate.most_at_once

    vectors, most_at_once = asyncio.run(run())
    assert vectors == [v[:8] for v in expected(texts, 8)]
    assert len(api.inputs) == 6 and most_at_once == limit


@pytest.mark.parametrize("asynchronous", MODES)
def test_one_failed_request_fails_the_call(server: Replayer, asynchronous: bool) -> None:
    api = serve(server)
    api.failures = [400]
    embeddings = client(server, dimensions=8, batch_size=1, max_concurrency=1)
    error = failure(embeddings, TEXTS, asynchronous)
    assert error.status == 400 and "failed on demand (400)" in str(error)
    assert len(server.requests) == 1  # the rest were not sent


# --- what is refused before sending --------------------------------------------------------


@pytest.mark.parametrize("asynchronous", MODES)
def test_an_empty_text_is_refused_before_sending(server: Replayer, asynchronous: bool) -> None:
    serve(server)
    with pytest.raises(ValueError) as caught:
        embed(client(server), ["a", "b", "", "d"], asynchronous)
    assert str(caught.value) == (
        "OpenAIEmbeddings: text 2 of 4 is an empty string, which the embeddings API refuses; "
        "leave it out (nothing was sent)"
    )
    assert server.requests == []


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda e: e.embed_documents(["a", 3]), TypeError, "text 1 of 2 is a int, not a str"),
        (lambda e: e.embed_documents("a text"), TypeError, "takes a list of texts, got str"),
        (lambda e: e.embed_query(""), ValueError, "the query is an empty string"),
        (lambda e: e.embed_query(["a"]), TypeError, "the query must be a str, got list"),
    ],
    ids=["not-a-str", "a-str-for-a-list", "empty-query", "list-query"],
)
def test_what_is_no_text_is_refused(server: Replayer, call: Any, error: type, message: str) -> None:
    serve(server)
    with client(server) as embeddings, pytest.raises(error, match=message):
        call(embeddings)
    assert server.requests == []


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"batch_size": 2049}, "batch_size must be at most 2048"),
        ({"batch_size": 0}, "batch_size must be a positive int"),
        ({"dimensions": 0}, "dimensions must be a positive int"),
        ({"max_chars_per_request": -1}, "max_chars_per_request must be a positive int"),
        ({"max_concurrency": 0}, "max_concurrency must be a positive int"),
        ({"encoding_format": "int8"}, "encoding_format must be 'float' or 'base64'"),
        ({"max_retries": -1}, "max_retries must be 0 or more"),
        (
            {"extra_body": {"user": "u1", "model": "m", "dimensions": 8}},
            r"extra_body may not set 'dimensions', 'model': pass dimensions=, model= to",
        ),
        ({"api_key_header": "api key"}, "api_key_header must be an HTTP header name"),
    ],
)
def test_settings_are_checked(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        OpenAIEmbeddings(api_key=KEY, **settings)


# --- retries -------------------------------------------------------------------------------


@pytest.mark.parametrize("asynchronous", MODES)
def test_a_429_is_retried_after_its_retry_after(server: Replayer, asynchronous: bool) -> None:
    api = serve(server)
    busy = b'{"error": {"message": "Rate limit reached", "type": "requests"}}'
    api.failures = [Reply(busy, "application/json", 429, headers={"Retry-After": "3"})]
    waits = Waits()
    assert embed(client(server, waits), TEXTS, asynchronous) == expected(TEXTS)
    assert len(server.requests) == 2 and waits == [3.0]


@pytest.mark.parametrize("asynchronous", MODES)
def test_500s_are_retried_with_backoff_then_give_up(server: Replayer, asynchronous: bool) -> None:
    api = serve(server)
    api.failures = [500, 502, 500]
    waits = Waits()
    error = failure(client(server, waits, max_retries=2, backoff=0.5), TEXTS, asynchronous)
    assert len(server.requests) == 3 and error.status == 500
    assert 0.5 <= waits[0] <= 0.625 and 1.0 <= waits[1] <= 1.25
    assert str(error) == (
        f"HTTP 500 from POST {server.url}/v1/embeddings (after 3 attempts): failed on demand (500)"
    )


@pytest.mark.parametrize("asynchronous", MODES)
def test_a_retried_batch_keeps_its_place(server: Replayer, asynchronous: bool) -> None:
    api = serve(server)
    api.failures = [503]
    texts = [f"text {n}" for n in range(6)]
    embeddings = client(server, dimensions=8, batch_size=2)
    assert embed(embeddings, texts, asynchronous) == [v[:8] for v in expected(texts, 8)]
    assert len(server.requests) == 4


@pytest.mark.parametrize("asynchronous", MODES)
def test_nothing_listening_is_retried_then_said(asynchronous: bool) -> None:
    with httpx.Client() as probe, pytest.raises(httpx.ConnectError):
        probe.post("http://127.0.0.1:9/v1/embeddings")  # the discard port: nothing listens
    waits = Waits()
    embeddings = OpenAIEmbeddings(
        base_url="http://127.0.0.1:9/v1",
        api_key=REAL_KEY,
        max_retries=1,
        sleep=waits.append,
        async_sleep=waits.asleep,
    )
    error = failure(embeddings, TEXTS, asynchronous)
    assert str(error).startswith(
        "POST http://127.0.0.1:9/v1/embeddings failed (after 2 attempts): ConnectError"
    )
    assert error.status is None and len(waits) == 1
    assert isinstance(error.__cause__, httpx.ConnectError)


# --- errors and the key --------------------------------------------------------------------


@pytest.mark.parametrize("asynchronous", MODES)
def test_a_refused_key_is_said_and_shown_nowhere(server: Replayer, asynchronous: bool) -> None:
    serve(server)  # wants KEY, and quotes back whole the key it was sent
    embeddings = client(server, api_key=REAL_KEY)
    error = failure(embeddings, TEXTS, asynchronous)
    assert error.status == 401 and len(server.requests) == 1
    assert str(error) == (
        f"HTTP 401 from POST {server.url}/v1/embeddings: Incorrect API key provided: ***. "
        "(invalid_api_key); the server refused the API key: set OPENAI_API_KEY (or api_key=) "
        "to a valid key for this server"
    )
    assert REAL_KEY not in (error.body or "") and REAL_KEY not in repr(embeddings)
    assert where_the_key_shows(error) == []


def test_no_key_is_said(server: Replayer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    serve(server)
    embeddings = OpenAIEmbeddings(base_url=f"{server.url}/v1")
    error = failure(embeddings, TEXTS, False)
    assert "Authorization" not in server.requests[0].headers
    assert str(error).endswith(
        "You didn't provide an API key. (invalid_api_key); no API key was sent: set "
        "OPENAI_API_KEY or pass api_key="
    )


def test_an_unknown_model_says_what_to_check(server: Replayer) -> None:
    serve(server)
    error = failure(client(server, model="text-embedding-4"), TEXTS, False)
    assert error.status == 404
    assert str(error).endswith(
        "The model `text-embedding-4` does not exist or you do not have access to it. "
        "(model_not_found); check the model name ('text-embedding-4') and base_url (it "
        "usually ends in /v1)"
    )


@pytest.mark.parametrize("asynchronous", MODES)
def test_the_log_and_repr_show_no_key_and_no_url_password(
    server: Replayer, asynchronous: bool, caplog: pytest.LogCaptureFixture
) -> None:
    api = serve(server, EmbeddingsAPI(key=REAL_KEY))
    echo = f'{{"error": {{"message": "busy serving {REAL_KEY}"}}}}'.encode()
    api.failures = [Reply(echo, "application/json", 503)]
    base_url = server.url.replace("http://", "http://me:pw@") + "/v1"
    waits = Waits()
    embeddings = OpenAIEmbeddings(
        base_url=base_url,
        api_key=REAL_KEY,
        backoff=0.0,
        sleep=waits.append,
        async_sleep=waits.asleep,
    )
    shown = repr(embeddings)
    with caplog.at_level(logging.DEBUG, logger="graph_agent"):
        assert embed(embeddings, TEXTS, asynchronous) == expected(TEXTS)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "HTTP 503 from POST http://me:***@127.0.0.1:" in logged
    assert shown == (
        f"OpenAIEmbeddings(model='text-embedding-3-small', base_url='{base_url}')".replace(
            ":pw@", ":***@"
        )
    )
    for text in (logged, shown):
        assert REAL_KEY not in text and ":pw@" not in text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html>Bad gateway</html>", "but the body is not JSON"),
        (b'{"object": "list"}', "has no 'data' list: not an embeddings response"),
        (b'{"data": [{"index": 0, "embedding": [1.0]}]}', "has 1 embeddings for 3 inputs"),
        (
            b'{"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}, '
            b'{"index": 2, "embedding": [1.0]}]}',
            "index 0 comes twice",
        ),
        (
            b'{"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": "@@"}, '
            b'{"index": 2, "embedding": [1.0]}]}',
            r"data\[1\] has an embedding that is not base64",
        ),
        (b'{"error": {"message": "quota exceeded", "code": "x"}}', "answered with an error"),
    ],
    ids=["not-json", "no-data", "too-few", "twice", "bad-base64", "error-with-200"],
)
def test_an_answer_that_is_no_embeddings_is_an_error(
    server: Replayer, body: bytes, message: str
) -> None:
    server.reply = Reply(body, "application/json")
    with pytest.raises(ModelError, match=message) as caught:
        embed(client(server), TEXTS, False)
    assert caught.value.status == 200 and caught.value.body == body.decode()


def test_an_answer_that_echoes_the_key_leaves_it_nowhere(server: Replayer) -> None:
    server.reply = Reply(f'{{"data": "{REAL_KEY}"}}'.encode(), "application/json")
    error = failure(client(server, api_key=REAL_KEY), TEXTS, False)
    assert "not an embeddings response" in str(error) and "***" in (error.body or "")
    assert where_the_key_shows(error) == []


# --- clients and closing -------------------------------------------------------------------


def test_clients_passed_in_are_used_and_left_open(server: Replayer) -> None:
    serve(server)
    sync = httpx.Client()
    with client(server, http_client=sync) as embeddings:
        assert embeddings.embed_documents(TEXTS) == expected(TEXTS)
    assert not sync.is_closed
    sync.close()

    async def run() -> None:
        async with httpx.AsyncClient() as mine:
            async with client(server, async_http_client=mine) as embeddings:
                assert await embeddings.aembed_documents(TEXTS) == expected(TEXTS)
            assert not mine.is_closed

    asyncio.run(run())
    assert len(server.requests) == 2


def test_its_own_client_is_closed_and_reopened(server: Replayer) -> None:
    serve(server)
    embeddings = client(server)
    with embeddings:
        first = embeddings.http_client
        embeddings.embed_documents(TEXTS)
    assert first.is_closed
    assert embeddings.embed_documents(TEXTS) == expected(TEXTS)  # a new client
    embeddings.close()


# --- in a store ----------------------------------------------------------------------------

MEMORIES = {
    "pets": "the customer has two cats and a dog",
    "billing": "the customer pays by card every month",
    "travel": "the customer flies to Lisbon in May",
}


def test_a_memory_store_searches_by_meaning_with_it(server: Replayer) -> None:
    serve(server)
    with client(server, encoding_format="base64") as embeddings:
        assert isinstance(embeddings, Embeddings)
        store = MemoryStore(index={"dims": 1536, "embed": embeddings, "fields": ["text"]})
        for key, text in MEMORIES.items():
            store.put(("memories", "u1"), key, {"text": text})
        found = store.search(("memories",), query="does the customer have cats", limit=2)
    scores = [item.score or 0.0 for item in found]
    assert found[0].key == "pets" and scores[0] > scores[1]
    assert all(request.path == "/v1/embeddings" for request in server.requests)


def test_an_async_memory_store_searches_by_meaning_with_it(server: Replayer) -> None:
    serve(server)
    embeddings = client(server)

    async def run() -> list[str]:
        async with embeddings:
            store = MemoryStore(index={"dims": 1536, "embed": embeddings, "fields": ["text"]})
            for key, text in MEMORIES.items():
                await store.aput(("memories", "u1"), key, {"text": text})
            found = await store.asearch(("memories",), query="when is the Lisbon flight")
            return [item.key for item in found]

    assert asyncio.run(run())[0] == "travel"


def test_it_is_exported() -> None:
    import graph_agent
    import graph_agent.models

    assert graph_agent.OpenAIEmbeddings is OpenAIEmbeddings
    assert graph_agent.models.OpenAIEmbeddings is OpenAIEmbeddings
    assert "OpenAIEmbeddings" in graph_agent.__all__
