"""What every client of an OpenAI-compatible endpoint shares: the key kept secret, the httpx
clients and their closing, the request's headers, the retry loop and the mapping of a failed
answer to ``ModelError``. ``OpenAIChatModel`` (``/chat/completions``) and
``OpenAIEmbeddings`` (``/embeddings``) are ``OpenAIEndpoint``s that add their own bodies and
parsing.

The logic is written once, as generators of effects (``checkpoint.effects``): a ``_Post``
sends one request with the sync or the async client, whichever driver runs it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, ClassVar, TypeVar

import httpx

from checkpoint.effects import Effect, Steps
from checkpoint.retry import Backoff, retried

from ..errors import ModelError
from ._openai_wire import error_detail, retry_after, truncate
from ._secrets import (
    HEADER_NAME,
    KeyAuth,
    Secrets,
    checked_key,
    read_text,
    shown_url,
    url_passwords,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "NOT_RETRIED_5XX",
    "RETRYABLE_STATUS",
    "OpenAIEndpoint",
    "describe",
    "env",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
NOT_RETRIED_5XX = frozenset({501, 505, 506, 508, 510, 511})
"""Server errors that state a fact about the server or the request, not a passing state:
Not Implemented, HTTP Version Not Supported, Variant Also Negotiates, Loop Detected, Not
Extended, Network Authentication Required. The same request gets the same answer."""
RETRYABLE_STATUS = frozenset({408, 409, 425, 429}) | (frozenset(range(500, 600)) - NOT_RETRIED_5XX)
"""The answers a retry can change: a timeout (408), a conflict such as a lock (409, retried by
OpenAI's own SDK), Too Early (425), a rate limit (429), and the server errors of an
overloaded, restarting or unreachable server or gateway (500, 502, 503, 504, Cloudflare's
52x, 529 ...). Every other 4xx is a verdict on the request itself."""
USER_AGENT = "graph-agent/0.1"

_E = TypeVar("_E", bound="OpenAIEndpoint")


def env(name: str) -> str | None:
    """The environment variable ``name``, stripped; ``None`` when unset or blank."""
    value = os.environ.get(name, "").strip()
    return value or None


def endpoint_url(base_url: str, path: str) -> str:
    """``{base_url}/{path}``, keeping a query (Azure's ``?api-version=``) at the end."""
    head, mark, query = base_url.partition("?")
    return f"{head.rstrip('/')}/{path}{mark}{query}"


class OpenAIEndpoint:
    """One endpoint (``path`` under ``base_url``) of an OpenAI-compatible API, with the rules
    every client of it keeps (see ``OpenAIChatModel``'s docstring: the key, the clients and
    closing, the retries and the errors). A subclass sets ``path`` and ``_log`` and builds
    its bodies; ``_exchanges(body)`` posts one and gives the successful response."""

    path: ClassVar[str]
    _log: ClassVar[logging.Logger]
    model: str

    def __init__(
        self,
        base_url: str | None,
        api_key: str | None,
        *,
        http_client: httpx.Client | None,
        async_http_client: httpx.AsyncClient | None,
        timeout: float | httpx.Timeout,
        max_retries: int,
        api_key_header: str,
        extra_headers: Mapping[str, str] | None,
        backoff: float,
        max_backoff: float,
        sleep: Callable[[float], None] | None,
        async_sleep: Callable[[float], Awaitable[None]] | None,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        if not backoff >= 0 or not max_backoff >= 0:
            raise ValueError("backoff and max_backoff must be 0 or more seconds")
        self.base_url: str = (base_url or env("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self._api_key = checked_key(api_key if api_key is not None else env("OPENAI_API_KEY"))
        if not isinstance(api_key_header, str) or not HEADER_NAME.fullmatch(api_key_header):
            raise ValueError(f"api_key_header must be an HTTP header name; got {api_key_header!r}")
        self._auth = KeyAuth(self._api_key, api_key_header) if self._api_key else None
        self._url = endpoint_url(self.base_url, self.path)
        self._shown_url = shown_url(self._url)
        self._secrets = Secrets((self._api_key, *url_passwords(self.base_url)))
        self.timeout = timeout
        self.max_retries = max_retries
        self.extra_headers = dict(extra_headers or {})
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
        return f"{type(self).__name__}(model={self.model!r}, base_url={shown_url(self.base_url)!r})"

    @property
    def url(self) -> str:
        """Where requests go: ``{base_url}/`` and the endpoint's path (a query in
        ``base_url`` stays at the end)."""
        return self._url

    def _redact(self, text: str) -> str:
        """``text`` with the API key and the base URL's password masked where ``searchable``
        (servers sometimes echo the key in an error): for what we show, never an answer."""
        return self._secrets.redact(text)

    def _headers(self, stream: bool) -> dict[str, str]:
        """The request's headers; never the key, which ``_auth`` adds to the request itself
        (so no local variable a traceback prints holds it)."""
        return {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if stream else "application/json",
            "User-Agent": USER_AGENT,
            **self.extra_headers,
        }

    def _timeout_for(self, client: httpx.Client | httpx.AsyncClient, stream: bool) -> httpx.Timeout:
        """The timeout of one request: the client's."""
        return client.timeout

    # --- clients --------------------------------------------------------------------------

    @property
    def http_client(self) -> httpx.Client:
        """The sync client: the injected one, or this object's own, created on first use."""
        if self._http_client is not None:
            return self._http_client
        with self._lock:
            if self._own_client is None:
                self._own_client = httpx.Client(timeout=self.timeout)
            return self._own_client

    @property
    def async_http_client(self) -> httpx.AsyncClient:
        """The async client: the injected one, or this object's own, created on first use in
        the running event loop (and again in a new loop: a pool cannot cross loops)."""
        if self._async_http_client is not None:
            return self._async_http_client
        loop = asyncio.get_running_loop()
        if self._own_async_client is None or self._own_async_loop is not loop:
            self._own_async_client = httpx.AsyncClient(timeout=self.timeout)
            self._own_async_loop = loop
        return self._own_async_client

    def close(self) -> None:
        """Close the sync client this object created (an injected one stays open). Used
        again, it opens a new one."""
        client, self._own_client = self._own_client, None
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Close both clients this object created (injected ones stay open)."""
        self.close()
        client, self._own_async_client = self._own_async_client, None
        self._own_async_loop = None
        if client is not None:
            await client.aclose()

    def __enter__(self: _E) -> _E:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self: _E) -> _E:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # --- one request, retried -------------------------------------------------------------

    def _request(
        self, client: httpx.Client | httpx.AsyncClient, body: dict[str, Any], stream: bool
    ) -> httpx.Request:
        return client.build_request(
            "POST",
            self.url,
            json=body,
            headers=self._headers(stream),
            timeout=self._timeout_for(client, stream),
        )

    def _exchanges(
        self, body: dict[str, Any], stream: bool = False
    ) -> Steps[tuple[httpx.Response, str]]:
        """POST ``body``, retrying what a retry can change (``checkpoint.retry.retried``,
        each POST a ``_Post``): the successful response and its text, redacted (a stream's
        response is left unread, with text ``""``); ``ModelError`` when it fails."""
        self._log.debug("POST %s (model=%s, stream=%s)", self._shown_url, body["model"], stream)
        post = _Post(self, body, stream)
        attempts = 0

        def attempt(n: int) -> Steps[tuple[httpx.Response, str]]:
            nonlocal attempts
            attempts = n
            response: httpx.Response = yield post
            if stream and response.is_success:
                return response, ""  # read by the stream
            text = yield from read_text(response, self._redact)
            if not response.is_success:
                raise _Refused(response, text)
            return response, text

        try:
            return (
                yield from retried(
                    attempt, self._pause_after, sleep=self._sleep, asleep=self._async_sleep
                )
            )
        except httpx.HTTPError as error:
            raise self._failed(error, attempts) from error
        except _Refused as refused:
            failure = self._http_error(refused.response.status_code, refused.text, attempts)
        raise failure  # outside the handler: the refusal is no part of the error

    def _pause_after(self, error: Exception, attempt: int) -> float | None:
        """The wait after failed attempt ``attempt`` (1 for the first), or ``None`` when it is
        not retried: only a connection error or timeout, or an answer a retry can change
        (``RETRYABLE_STATUS``), and only while retries are left."""
        if attempt > self.max_retries:
            return None
        if isinstance(error, _Refused):
            status = error.response.status_code
            if status not in RETRYABLE_STATUS:
                return None
            return self._retry_delay(attempt, error.response, f"HTTP {status}")
        if isinstance(error, httpx.TransportError):
            return self._retry_delay(attempt, None, describe(error))
        return None

    def _retry_delay(self, attempt: int, response: httpx.Response | None, reason: str) -> float:
        """How long to wait after failed attempt ``attempt``: the server's ``Retry-After`` when
        it gives one, else exponential backoff plus up to 25 % jitter; never more than
        ``max_backoff``."""
        delay = retry_after(response.headers) if response is not None else None
        if delay is None:
            delay = Backoff(self.backoff, 2.0, self.max_backoff, spread=(1.0, 1.25)).delay(attempt)
        delay = max(0.0, min(delay, self.max_backoff))
        self._log.warning(
            "%s from POST %s; retry %d of %d in %.2fs",
            self._redact(reason),
            self._shown_url,
            attempt,
            self.max_retries,
            delay,
        )
        return delay

    def _attempts(self, attempts: int) -> str:
        return f" (after {attempts} attempts)" if attempts > 1 else ""

    def _status_hint(self, status: int) -> str | None:
        """What to do about a failed answer with ``status``, added to its message (none by
        default)."""
        return None

    def _http_error(self, status: int, text: str, attempts: int) -> ModelError:
        try:
            detail = error_detail(json.loads(text))
        except ValueError:
            detail = None
        message = f"HTTP {status} from POST {self._shown_url}{self._attempts(attempts)}"
        if detail:
            message += f": {detail}"
        hint = self._status_hint(status)
        if hint:
            message += f"; {hint}"
        return ModelError(self._redact(message), status=status, body=truncate(self._redact(text)))

    def _failed(self, error: httpx.HTTPError, attempts: int) -> ModelError:
        return ModelError(
            self._redact(
                f"POST {self._shown_url} failed{self._attempts(attempts)}: {describe(error)}"
            )
        )


class _Post(Effect):
    """One POST of a request, its response left unread: ``run`` sends it with the endpoint's
    sync httpx client, ``arun`` with its async one."""

    __slots__ = ("body", "endpoint", "stream")

    def __init__(self, endpoint: OpenAIEndpoint, body: dict[str, Any], stream: bool) -> None:
        self.endpoint, self.body, self.stream = endpoint, body, stream

    def run(self, context: Any) -> httpx.Response:
        endpoint = self.endpoint
        client = endpoint.http_client
        request = endpoint._request(client, self.body, self.stream)
        return client.send(request, stream=True, auth=endpoint._auth)

    def arun(self, context: Any) -> Awaitable[httpx.Response]:
        endpoint = self.endpoint
        client = endpoint.async_http_client
        request = endpoint._request(client, self.body, self.stream)
        return client.send(request, stream=True, auth=endpoint._auth)


class _Refused(Exception):
    """An attempt the server answered with an error status: a failure to ``retried``, turned
    into ``ModelError`` when it is not retried."""

    def __init__(self, response: httpx.Response, text: str) -> None:
        super().__init__(response.status_code)
        self.response = response
        self.text = text


def describe(error: BaseException) -> str:
    """``Type: message`` of an exception (just its type when it has no message)."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
