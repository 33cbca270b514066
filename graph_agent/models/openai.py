"""``OpenAIChatModel``: the OpenAI chat-completions API over httpx.

The same wire format serves OpenAI, DashScope compatible mode (Qwen), vLLM, Ollama and
llama.cpp servers: point ``base_url`` at them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Mapping
from types import TracebackType
from typing import Any

import httpx

from ..errors import ModelError
from ._openai_wire import build_body, error_detail, parse_completion, retry_after, truncate
from ._sse import aiter_chunks, iter_chunks
from .types import ChatOptions, ChatResponse, Prompt

__all__ = ["OpenAIChatModel"]

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
RETRYABLE_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))
_USER_AGENT = "graph-agent/0.1"


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def _checked_key(key: str | None) -> str | None:
    """The API key without surrounding whitespace (a key read from a file often ends in a
    newline); ``ModelError``, never showing the key, for one an HTTP header cannot carry."""
    if key is None:
        return None
    key = key.strip()
    for position, char in enumerate(key):
        if not (" " < char < "\x7f"):
            what = (
                "a space or control character"
                if char.isspace() or char < " "
                else ("a character that is not ASCII")
            )
            raise ModelError(
                f"the API key has {what} at position {position} (of {len(key)}); an HTTP "
                "header can carry only printable ASCII: check the key (OPENAI_API_KEY or "
                "api_key=) for a pasted quote, space or line break"
            )
    return key or None


class _KeyAuth(httpx.Auth):
    """Adds the key header to each request; the one place the key is kept.

    ``Authorization: Bearer <key>`` by default; ``api-key: <key>`` (Azure's deployment
    endpoints) or any other header name sends the bare key.
    """

    __slots__ = ("_name", "_value")

    def __init__(self, key: str, header: str) -> None:
        self._name = header
        self._value = f"Bearer {key}" if header.lower() == "authorization" else key

    def __repr__(self) -> str:
        return f"_KeyAuth({self._name}: ***)"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers[self._name] = self._value
        yield request


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _completions_url(base_url: str) -> str:
    """``{base_url}/chat/completions``, keeping a query (Azure's ``?api-version=``) at the end."""
    path, mark, query = base_url.partition("?")
    return f"{path.rstrip('/')}/chat/completions{mark}{query}"


class OpenAIChatModel:
    """A ``ChatModel`` for any OpenAI-compatible ``/chat/completions`` endpoint.

    ``model``, ``base_url`` and ``api_key`` default to the environment (``GRAPH_AGENT_MODEL``,
    ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), then to ``gpt-4o-mini`` and the OpenAI API. With
    no key no ``Authorization`` header is sent (local servers need none);
    ``api_key_header="api-key"`` sends the bare key in that header instead (Azure).

    The model creates its ``httpx.Client`` / ``httpx.AsyncClient`` on first use and reuses
    it (connection pooling); ``close()`` / ``aclose()`` or ``with`` close the clients it
    created. Clients passed in (``http_client=``, ``async_http_client=``) are used as they are
    (their own timeout applies) and are never closed by the model.

    429, 408 and 5xx answers and connection errors or timeouts are retried up to
    ``max_retries`` times with capped exponential backoff and jitter (``Retry-After`` is
    honoured, capped at ``max_backoff``); a stream is retried only before its body is read.
    Every other failure raises ``ModelError`` with the status and the (truncated) body. The
    API key never appears in ``repr``, log records or errors: text a server echoes it in is
    masked.

    ``default_options`` fill in what a prompt's options leave unset; ``extra_headers`` go
    with every request and ``extra_body`` into every request body (provider-specific fields).
    ``sleep`` / ``async_sleep`` are how retries wait (tests pass a recorder).
    """

    provider_name = "openai"  # gen_ai.provider.name in traces (an OpenAI-compatible API)

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout = 60.0,
        stream_idle_timeout: float | None = 60.0,
        max_retries: int = 2,
        api_key_header: str = "Authorization",
        default_options: ChatOptions | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        sleep: Callable[[float], None] | None = None,
        async_sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.model: str = (
            model
            or (default_options.model if default_options else None)
            or _env("GRAPH_AGENT_MODEL")
            or DEFAULT_MODEL
        )
        self.base_url: str = (base_url or _env("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self._api_key = _checked_key(api_key if api_key is not None else _env("OPENAI_API_KEY"))
        if not isinstance(api_key_header, str) or not _HEADER_NAME.fullmatch(api_key_header):
            raise ValueError(f"api_key_header must be an HTTP header name; got {api_key_header!r}")
        self._auth = _KeyAuth(self._api_key, api_key_header) if self._api_key else None
        self._url = _completions_url(self.base_url)
        self._secrets = tuple(
            secret for secret in (self._api_key, httpx.URL(self.base_url).password) if secret
        )
        self.timeout = timeout
        if stream_idle_timeout is not None and stream_idle_timeout <= 0:
            raise ValueError("stream_idle_timeout must be a positive number of seconds, or None")
        self.stream_idle_timeout = stream_idle_timeout
        self.max_retries = max_retries
        self.default_options = default_options
        self.extra_headers = dict(extra_headers or {})
        self.extra_body = dict(extra_body or {})
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._sleep = sleep or time.sleep
        self._async_sleep = async_sleep or asyncio.sleep
        self._http_client = http_client
        self._async_http_client = async_http_client
        self._own_client: httpx.Client | None = None
        self._own_async_client: httpx.AsyncClient | None = None
        self._own_async_loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    # --- presentation and secrecy -------------------------------------------------------

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.model!r}, base_url={self._redact(self.base_url)!r})"

    @property
    def url(self) -> str:
        """Where requests go: ``{base_url}/chat/completions`` (a query in ``base_url`` stays
        at the end)."""
        return self._url

    def _redact(self, text: str) -> str:
        """``text`` with the API key and the base URL's password masked (servers sometimes
        echo the key; the URL goes into logs and errors)."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _headers(self, stream: bool) -> dict[str, str]:
        """The request's headers; never the key, which ``_auth`` adds to the request itself
        (so no local variable a traceback prints holds it)."""
        return {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if stream else "application/json",
            "User-Agent": _USER_AGENT,
            **self.extra_headers,
        }

    def _timeout_for(self, stream: bool) -> Any:
        """A stream waits at most ``stream_idle_timeout`` for its next bytes; anything else
        (and every request of a client passed in) uses the client's timeout."""
        if not stream or self.stream_idle_timeout is None or self._http_client is not None:
            return httpx.USE_CLIENT_DEFAULT
        base = (
            self.timeout if isinstance(self.timeout, httpx.Timeout) else httpx.Timeout(self.timeout)
        )
        return httpx.Timeout(
            connect=base.connect, read=self.stream_idle_timeout, write=base.write, pool=base.pool
        )

    # --- clients --------------------------------------------------------------------------

    @property
    def http_client(self) -> httpx.Client:
        """The sync client: the injected one, or the model's own, created on first use."""
        if self._http_client is not None:
            return self._http_client
        with self._lock:
            if self._own_client is None:
                self._own_client = httpx.Client(timeout=self.timeout)
            return self._own_client

    @property
    def async_http_client(self) -> httpx.AsyncClient:
        """The async client: the injected one, or the model's own, created on first use in
        the running event loop (and again in a new loop: a pool cannot cross loops)."""
        if self._async_http_client is not None:
            return self._async_http_client
        loop = asyncio.get_running_loop()
        if self._own_async_client is None or self._own_async_loop is not loop:
            self._own_async_client = httpx.AsyncClient(timeout=self.timeout)
            self._own_async_loop = loop
        return self._own_async_client

    def close(self) -> None:
        """Close the sync client this model created (an injected one stays open). Used
        again, the model opens a new one."""
        client, self._own_client = self._own_client, None
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Close both clients this model created (injected ones stay open)."""
        self.close()
        client, self._own_async_client = self._own_async_client, None
        self._own_async_loop = None
        if client is not None:
            await client.aclose()

    def __enter__(self) -> OpenAIChatModel:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # --- the ChatModel protocol -----------------------------------------------------------

    def request_body(self, prompt: Prompt, *, stream: bool = False) -> dict[str, Any]:
        """The JSON body this model posts for ``prompt`` (see ``build_body``)."""
        return build_body(
            prompt,
            model=self.model,
            default_options=self.default_options,
            stream=stream,
            extra_body=self.extra_body,
        )

    def call(self, prompt: Prompt) -> ChatResponse:
        """One completion; ``ModelError`` when it fails (after the retries)."""
        response = self._send(self.request_body(prompt), stream=False)
        return self._parse(response.status_code, response.text)

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        """The completion as chunks (``ChatResponse.merge`` folds them). The request is made
        on the first ``next()``; a stream cut short raises ``ModelError`` after its chunks."""
        return self._stream(self.request_body(prompt, stream=True))

    async def acall(self, prompt: Prompt) -> ChatResponse:
        """The async twin of ``call``."""
        response = await self._asend(self.request_body(prompt), stream=False)
        return self._parse(response.status_code, response.text)

    def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        """The async twin of ``stream``."""
        return self._astream(self.request_body(prompt, stream=True))

    # --- internals ------------------------------------------------------------------------

    def _parse(self, status: int, text: str) -> ChatResponse:
        try:
            data = json.loads(text)
        except ValueError as error:
            raise ModelError(
                f"HTTP {status} from POST {self._redact(self.url)} but the body is not "
                f"JSON ({error})",
                status=status,
                body=truncate(self._redact(text)),
            ) from None
        return parse_completion(data, status=status, body=text, redact=self._redact)

    def _stream(self, body: dict[str, Any]) -> Iterator[ChatResponse]:
        response = self._send(body, stream=True)
        try:
            if _is_json(response):
                raw = response.read()
                if not _looks_like_sse(raw):
                    yield self._parse(response.status_code, raw.decode("utf-8", "replace"))
                    return
                yield from iter_chunks([raw], status=response.status_code, redact=self._redact)
                return
            yield from iter_chunks(
                response.iter_bytes(),
                status=response.status_code,
                redact=self._redact,
                idle=self.stream_idle_timeout,
            )
        except httpx.HTTPError as error:
            raise self._interrupted(error) from error
        finally:
            response.close()

    async def _astream(self, body: dict[str, Any]) -> AsyncIterator[ChatResponse]:
        response = await self._asend(body, stream=True)
        try:
            if _is_json(response):
                raw = await response.aread()
                if not _looks_like_sse(raw):
                    yield self._parse(response.status_code, raw.decode("utf-8", "replace"))
                    return
                for chunk in iter_chunks([raw], status=response.status_code, redact=self._redact):
                    yield chunk
                return
            async for chunk in aiter_chunks(
                response.aiter_bytes(),
                status=response.status_code,
                redact=self._redact,
                idle=self.stream_idle_timeout,
            ):
                yield chunk
        except httpx.HTTPError as error:
            raise self._interrupted(error) from error
        finally:
            await response.aclose()

    def _send(self, body: dict[str, Any], *, stream: bool) -> httpx.Response:
        """POST ``body``, retrying what is retryable; the successful response (unread when
        ``stream``)."""
        client, headers = self.http_client, self._headers(stream)
        logger.debug("POST %s (model=%s, stream=%s)", self._redact(self.url), body["model"], stream)
        for attempt in range(self.max_retries + 1):
            try:
                request = client.build_request(
                    "POST", self.url, json=body, headers=headers, timeout=self._timeout_for(stream)
                )
                response = client.send(request, stream=stream, auth=self._auth)
            except httpx.TransportError as error:
                if attempt < self.max_retries:
                    self._sleep(self._retry_delay(attempt, None, _describe(error)))
                    continue
                raise self._failed(error, attempt + 1) from error
            except httpx.HTTPError as error:
                raise self._failed(error, attempt + 1) from error
            if response.is_success:
                return response
            text = _read_error_body(response) if stream else response.text
            if response.status_code in RETRYABLE_STATUS and attempt < self.max_retries:
                self._sleep(self._retry_delay(attempt, response, f"HTTP {response.status_code}"))
                continue
            raise self._http_error(response.status_code, text, attempt + 1)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _asend(self, body: dict[str, Any], *, stream: bool) -> httpx.Response:
        """The async twin of ``_send``."""
        client, headers = self.async_http_client, self._headers(stream)
        logger.debug("POST %s (model=%s, stream=%s)", self._redact(self.url), body["model"], stream)
        for attempt in range(self.max_retries + 1):
            try:
                request = client.build_request(
                    "POST", self.url, json=body, headers=headers, timeout=self._timeout_for(stream)
                )
                response = await client.send(request, stream=stream, auth=self._auth)
            except httpx.TransportError as error:
                if attempt < self.max_retries:
                    await self._async_sleep(self._retry_delay(attempt, None, _describe(error)))
                    continue
                raise self._failed(error, attempt + 1) from error
            except httpx.HTTPError as error:
                raise self._failed(error, attempt + 1) from error
            if response.is_success:
                return response
            text = await _aread_error_body(response) if stream else response.text
            if response.status_code in RETRYABLE_STATUS and attempt < self.max_retries:
                delay = self._retry_delay(attempt, response, f"HTTP {response.status_code}")
                await self._async_sleep(delay)
                continue
            raise self._http_error(response.status_code, text, attempt + 1)
        raise AssertionError("unreachable")  # pragma: no cover

    def _retry_delay(self, attempt: int, response: httpx.Response | None, reason: str) -> float:
        """How long to wait before retry ``attempt + 1``: the server's ``Retry-After`` when it
        gives one, else exponential backoff with jitter; never more than ``max_backoff``."""
        delay = retry_after(response.headers) if response is not None else None
        if delay is None:
            base = self.backoff * 2**attempt
            delay = base + random.uniform(0, base / 4)
        delay = max(0.0, min(delay, self.max_backoff))
        logger.warning(
            "%s from POST %s; retry %d of %d in %.2fs",
            self._redact(reason),
            self._redact(self.url),
            attempt + 1,
            self.max_retries,
            delay,
        )
        return delay

    def _attempts(self, attempts: int) -> str:
        return f" (after {attempts} attempts)" if attempts > 1 else ""

    def _http_error(self, status: int, text: str, attempts: int) -> ModelError:
        try:
            detail = error_detail(json.loads(text))
        except ValueError:
            detail = None
        message = f"HTTP {status} from POST {self.url}{self._attempts(attempts)}"
        if detail:
            message += f": {detail}"
        return ModelError(self._redact(message), status=status, body=truncate(self._redact(text)))

    def _failed(self, error: httpx.HTTPError, attempts: int) -> ModelError:
        return ModelError(
            self._redact(f"POST {self.url} failed{self._attempts(attempts)}: {_describe(error)}")
        )

    def _interrupted(self, error: httpx.HTTPError) -> ModelError:
        return ModelError(
            self._redact(f"the stream from POST {self.url} broke off: {_describe(error)}"),
            status=200,
        )


def _describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _looks_like_sse(raw: bytes) -> bool:
    """A body labelled JSON that is an event stream (some proxies label streams so)."""
    start = raw.lstrip()[:6]
    return start.startswith((b"data:", b"event:", b":"))


def _is_json(response: httpx.Response) -> bool:
    """Whether a server answered a stream request with one JSON document instead."""
    return str(response.headers.get("content-type", "")).startswith("application/json")


def _read_error_body(response: httpx.Response) -> str:
    try:
        return response.read().decode("utf-8", "replace")
    except httpx.HTTPError:
        return ""
    finally:
        response.close()


async def _aread_error_body(response: httpx.Response) -> str:
    try:
        return (await response.aread()).decode("utf-8", "replace")
    except httpx.HTTPError:
        return ""
    finally:
        await response.aclose()
