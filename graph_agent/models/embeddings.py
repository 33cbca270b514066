"""``OpenAIEmbeddings``: the OpenAI embeddings API (``POST {base_url}/embeddings``) over httpx,
as the ``Embeddings`` a store's semantic index takes.

The same wire format serves OpenAI, Azure OpenAI, DashScope compatible mode, vLLM, Ollama and
llama.cpp servers: point ``base_url`` at them.
"""

from __future__ import annotations

import array
import asyncio
import base64
import binascii
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import httpx

from checkpoint.effects import Steps, aperform, perform

from ..errors import ModelError
from ._openai_http import OpenAIEndpoint
from ._openai_wire import error_detail, truncate
from ._secrets import unframed

__all__ = ["DEFAULT_EMBEDDING_MODEL", "MAX_INPUTS_PER_REQUEST", "OpenAIEmbeddings"]

logger = logging.getLogger(__name__)

DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
MAX_INPUTS_PER_REQUEST = 2048
"""The most inputs OpenAI takes in one request."""
DEFAULT_MAX_CHARS = 300_000
"""Characters per request by default: OpenAI takes at most 300,000 tokens summed over a
request's inputs, and a token is about four characters of English (rarely less than one)."""
ENCODINGS = ("float", "base64")
_OWN_FIELDS = ("model", "input", "encoding_format", "dimensions")

Vector = list[float]
T = TypeVar("T")


def _positive_int(name: str, value: object, most: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    if most is not None and value > most:
        raise ValueError(f"{name} must be at most {most} (OpenAI's limit), got {value}")
    return value


class OpenAIEmbeddings(OpenAIEndpoint):
    """``Embeddings`` from any OpenAI-compatible ``/embeddings`` endpoint: a store built with
    ``index={"dims": 1536, "embed": OpenAIEmbeddings(), "fields": ["text"]}`` embeds with it.

    ``model`` defaults to ``text-embedding-3-small``; ``base_url`` and ``api_key`` to the
    environment (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), then to the OpenAI API.
    ``dimensions`` asks a model that can shorten its vectors (``text-embedding-3-*``) for that
    many; a server that answers with another length is an error. ``encoding_format`` is how
    vectors travel: ``"float"`` (JSON numbers) or ``"base64"`` (float32, a third of the
    bytes); either way they come back as lists of floats.

    ``embed_documents(texts)`` gives one vector per text, in the order of ``texts``: the texts
    are sent in requests of at most ``batch_size`` texts (2048, OpenAI's limit, at most) and
    ``max_chars_per_request`` characters (a longer text goes alone), and each answer is put
    back in order by its ``index``. ``aembed_documents`` sends up to ``max_concurrency`` of
    those requests at once. No texts, no request. An empty string (which the API refuses) or
    something that is not a string is refused before anything is sent, saying which one.

    Everything else is as ``OpenAIChatModel`` does it: the key never shows in ``repr``, logs
    or errors; the clients it creates are closed by ``close()`` / ``aclose()`` or ``with``
    (clients passed in are never closed); 408, 409, 425, 429, most 5xx and connection errors
    are retried up to ``max_retries`` times (``Retry-After`` honoured, backoff capped at
    ``max_backoff``); every other failure is a ``ModelError`` with the status, the provider's
    message and what to do about it. ``extra_body`` fields go in every request body (a
    ``ValueError`` names those it may not set: ``model``, ``input``, ``encoding_format``,
    ``dimensions``); ``extra_headers`` go with every request.
    """

    path = "embeddings"
    _log = logger

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        dimensions: int | None = None,
        encoding_format: str = "float",
        batch_size: int = MAX_INPUTS_PER_REQUEST,
        max_chars_per_request: int = DEFAULT_MAX_CHARS,
        max_concurrency: int = 4,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout = 60.0,
        max_retries: int = 2,
        api_key_header: str = "Authorization",
        extra_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        sleep: Callable[[float], None] | None = None,
        async_sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(
            base_url,
            api_key,
            http_client=http_client,
            async_http_client=async_http_client,
            timeout=timeout,
            max_retries=max_retries,
            api_key_header=api_key_header,
            extra_headers=extra_headers,
            backoff=backoff,
            max_backoff=max_backoff,
            sleep=sleep,
            async_sleep=async_sleep,
        )
        self.model: str = model or DEFAULT_EMBEDDING_MODEL
        if dimensions is not None:
            _positive_int("dimensions", dimensions)
        if encoding_format not in ENCODINGS:
            raise ValueError(
                f"encoding_format must be 'float' or 'base64', got {encoding_format!r}"
            )
        self.dimensions = dimensions
        self.encoding_format = encoding_format
        self.batch_size = _positive_int("batch_size", batch_size, MAX_INPUTS_PER_REQUEST)
        self.max_chars_per_request = _positive_int("max_chars_per_request", max_chars_per_request)
        self.max_concurrency = _positive_int("max_concurrency", max_concurrency)
        self.extra_body = dict(extra_body or {})
        taken = sorted(set(self.extra_body) & set(_OWN_FIELDS))
        if taken:
            raise ValueError(
                f"extra_body may not set {', '.join(map(repr, taken))}: pass "
                f"{', '.join(f'{name}=' for name in taken)} to OpenAIEmbeddings instead (the "
                "input is what you embed)"
            )

    # --- the Embeddings protocol ----------------------------------------------------------

    def request_body(self, texts: Sequence[str]) -> dict[str, Any]:
        """The JSON body this client posts for one request of ``texts``."""
        body: dict[str, Any] = dict(self.extra_body)
        body["model"] = self.model
        body["input"] = list(texts)
        body["encoding_format"] = self.encoding_format
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        return body

    def embed_documents(self, texts: list[str]) -> list[Vector]:
        """One vector per text, in order; ``[]`` for no texts (no request is made).
        ``ModelError`` when a request fails (after its retries)."""
        return [
            vector
            for batch in self._batches(texts, "embed_documents")
            for vector in perform(self._embedded(batch))
        ]

    def embed_query(self, text: str) -> Vector:
        """The vector of one text (a search's query)."""
        return self.embed_documents(_one(text))[0]

    async def aembed_documents(self, texts: list[str]) -> list[Vector]:
        """The async twin of ``embed_documents``: up to ``max_concurrency`` requests at once."""
        jobs = [self._job(batch) for batch in self._batches(texts, "aembed_documents")]
        return [
            vector for vectors in await _bounded(jobs, self.max_concurrency) for vector in vectors
        ]

    async def aembed_query(self, text: str) -> Vector:
        """The async twin of ``embed_query``."""
        return (await self.aembed_documents(_one(text)))[0]

    # --- internals ------------------------------------------------------------------------

    def _batches(self, texts: Sequence[str], method: str) -> list[list[str]]:
        """``texts``, checked, cut into the requests that carry them (in order): each at most
        ``batch_size`` texts and ``max_chars_per_request`` characters, a longer text alone."""
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            raise TypeError(
                f"{type(self).__name__}.{method} takes a list of texts, got "
                f"{type(texts).__name__}; embed one text with embed_query(text)"
            )
        batches: list[list[str]] = []
        batch: list[str] = []
        chars = 0
        for position, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(
                    f"{type(self).__name__}: text {position} of {len(texts)} is a "
                    f"{type(text).__name__}, not a str; pass the texts as strings"
                )
            if not text:
                raise ValueError(
                    f"{type(self).__name__}: text {position} of {len(texts)} is an empty "
                    "string, which the embeddings API refuses; leave it out (nothing was sent)"
                )
            full = len(batch) >= self.batch_size
            if batch and (full or chars + len(text) > self.max_chars_per_request):
                batches.append(batch)
                batch, chars = [], 0
            batch.append(text)
            chars += len(text)
        if batch:
            batches.append(batch)
        return batches

    def _job(self, batch: list[str]) -> Callable[[], Awaitable[list[Vector]]]:
        return lambda: aperform(self._embedded(batch))

    def _embedded(self, batch: list[str]) -> Steps[list[Vector]]:
        """The vectors of one request's texts, in their order."""
        response, text = yield from self._exchanges(self.request_body(batch))
        try:
            return self._parse(response.status_code, text, len(batch))
        except ModelError as error:
            failure = unframed(error)
        del text  # the answer's text: a traceback shows the locals of this frame
        raise failure

    def _parse(self, status: int, text: str, count: int) -> list[Vector]:
        try:
            return self._vectors(json.loads(text), count)
        except ModelError as error:
            message = str(error)
        except ValueError as error:
            message = (
                f"HTTP {status} from POST {self._shown_url} but the body is not JSON ({error})"
            )
        failure = ModelError(
            self._redact(message), status=status, body=truncate(self._redact(text))
        )
        del text  # a traceback shows the locals of this frame
        raise failure  # outside the handlers: the frames that read the answer are left behind

    def _vectors(self, data: Any, count: int) -> list[Vector]:
        """The ``count`` vectors of an embeddings answer, in input order by their ``index``;
        ``ModelError`` for an answer that is not one."""
        where = f"the answer of POST {self._shown_url}"
        detail = error_detail(data)
        if detail is not None:
            raise ModelError(f"the server answered with an error: {detail}")
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise ModelError(f"{where} has no 'data' list: not an embeddings response")
        if len(items) != count:
            raise ModelError(f"{where} has {len(items)} embeddings for {count} inputs")
        vectors: list[Vector | None] = [None] * count
        for position, item in enumerate(items):
            if not isinstance(item, dict):
                raise ModelError(f"{where}: data[{position}] is not an object")
            index = item.get("index", position)
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
                raise ModelError(
                    f"{where}: data[{position}] has index {index!r}, not 0 to {count - 1}"
                )
            if vectors[index] is not None:
                raise ModelError(f"{where}: index {index} comes twice")
            vectors[index] = _vector(item.get("embedding"), f"{where}: data[{position}]")
        done = [vector for vector in vectors if vector is not None]
        lengths = {len(vector) for vector in done}
        if self.dimensions is not None and lengths != {self.dimensions}:
            raise ModelError(
                f"{where} has vectors of {sorted(lengths)} dimensions, not the {self.dimensions} "
                f"asked for: model {self.model!r} may not take 'dimensions'; leave it out"
            )
        if len(lengths) > 1:
            raise ModelError(f"{where} has vectors of different lengths {sorted(lengths)}")
        return done

    def _status_hint(self, status: int) -> str | None:
        if status == 401:
            if self._auth is None:
                return "no API key was sent: set OPENAI_API_KEY or pass api_key="
            return (
                "the server refused the API key: set OPENAI_API_KEY (or api_key=) to a valid "
                "key for this server"
            )
        if status == 403:
            return f"check that the key may use the model {self.model!r}"
        if status == 404:
            return f"check the model name ({self.model!r}) and base_url (it usually ends in /v1)"
        return None


def _one(text: str) -> list[str]:
    if not isinstance(text, str):
        raise TypeError(f"the query must be a str, got {type(text).__name__}")
    if not text:
        raise ValueError(
            "the query is an empty string, which the embeddings API refuses; search without "
            "a query instead (nothing was sent)"
        )
    return [text]


def _vector(raw: Any, where: str) -> Vector:
    """An embedding as floats: a JSON list of numbers, or base64 of little-endian float32."""
    if isinstance(raw, str):
        try:
            packed = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError) as error:
            raise ModelError(f"{where} has an embedding that is not base64 ({error})") from None
        if len(packed) % 4:
            raise ModelError(f"{where} has a base64 embedding of {len(packed)} bytes, not float32s")
        floats = array.array("f", packed)
        if sys.byteorder == "big":
            floats.byteswap()
        return floats.tolist()
    numbers = isinstance(raw, list) and raw
    if numbers and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in raw):
        return [float(x) for x in raw]
    raise ModelError(f"{where} has no embedding (a list of numbers or a base64 string)")


async def _bounded(jobs: list[Callable[[], Awaitable[T]]], limit: int) -> list[T]:
    """The results of ``jobs``, in order, at most ``limit`` running at once; the first error
    cancels the rest and is raised."""
    if len(jobs) <= 1:
        return [await job() for job in jobs]
    gate = asyncio.Semaphore(limit)

    async def run(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await job()

    tasks = [asyncio.ensure_future(run(job)) for job in jobs]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
