"""``OpenAIChatModel``: the OpenAI chat-completions API over httpx.

The same wire format serves OpenAI, DashScope compatible mode (Qwen), vLLM, Ollama and
llama.cpp servers: point ``base_url`` at them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from types import TracebackType
from typing import Any

import httpx

from checkpoint.effects import Effect, Steps, aperform, perform
from checkpoint.retry import Backoff, retried

from .._runtime.streams import Pull, Streamed, astream, stream
from ..errors import ModelError
from ._openai_wire import build_body, error_detail, parse_completion, retry_after, truncate
from ._secrets import (
    HEADER_NAME,
    Close,
    KeyAuth,
    Secrets,
    body_of,
    checked_key,
    read_text,
    shown_url,
    unframed,
    url_passwords,
)
from ._sse import sse_chunks
from .types import ChatOptions, ChatResponse, Prompt

__all__ = ["OpenAIChatModel"]

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_STREAM_IDLE_TIMEOUT = 60.0
NOT_RETRIED_5XX = frozenset({501, 505, 506, 508, 510, 511})
"""Server errors that state a fact about the server or the request, not a passing state:
Not Implemented, HTTP Version Not Supported, Variant Also Negotiates, Loop Detected, Not
Extended, Network Authentication Required. The same request gets the same answer."""
RETRYABLE_STATUS = frozenset({408, 409, 425, 429}) | (frozenset(range(500, 600)) - NOT_RETRIED_5XX)
"""The answers a retry can change: a timeout (408), a conflict such as a lock (409, retried by
OpenAI's own SDK), Too Early (425), a rate limit (429), and the server errors of an
overloaded, restarting or unreachable server or gateway (500, 502, 503, 504, Cloudflare's
52x, 529 ...). Every other 4xx is a verdict on the request itself."""
_USER_AGENT = "graph-agent/0.1"


class _UpToTimeout:
    """The default ``stream_idle_timeout``: 60 s, or the read timeout when that is shorter."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "min(60.0, timeout)"


_UP_TO_TIMEOUT = _UpToTimeout()


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


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

    A stream that brings no event for ``stream_idle_timeout`` seconds fails; by default that
    is 60 s, or the read timeout of ``timeout`` when it is shorter (an explicit value is kept
    as given).

    The answers a retry can change (``RETRYABLE_STATUS``: 408, 409, 425, 429 and the 5xx but
    501, 505, 506, 508, 510, 511) and connection errors or timeouts are retried up to
    ``max_retries`` times with capped exponential backoff (``checkpoint.retry.Backoff``) plus
    up to 25 % jitter (``Retry-After`` is honoured, capped at ``max_backoff``); a stream is
    retried only before its body is read.
    Every other failure raises ``ModelError`` with the status and the (truncated) body. The
    API key never appears in ``repr``, log records or errors: a key a failed answer echoes
    is masked as its text is read, and a password in ``base_url`` is shown as ``***``. A
    successful answer is never rewritten, even where it holds the key. A key shorter than
    16 characters or a placeholder (``"ollama"``, ``"EMPTY"``, ``"sk-no-key-required"``) is
    not searched for: masking it would mangle ordinary text.

    ``default_options`` fill in what a prompt's options leave unset; ``extra_headers`` go
    with every request and ``extra_body`` into every request body (provider-specific fields).
    ``sleep`` / ``async_sleep`` are how retries wait (tests pass a recorder).

    ``supports_native_output`` (default ``True``) tells a ``ReactAgent`` with an
    ``output_type`` that this endpoint takes OpenAI's ``response_format`` json_schema, so its
    ``"auto"`` output strategy is ``"native"``; set it to ``False`` for a compatible server
    without json_schema support (the agent then offers a final-answer tool instead).
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
        stream_idle_timeout: float | _UpToTimeout | None = _UP_TO_TIMEOUT,
        max_retries: int = 2,
        api_key_header: str = "Authorization",
        default_options: ChatOptions | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        sleep: Callable[[float], None] | None = None,
        async_sleep: Callable[[float], Awaitable[None]] | None = None,
        supports_native_output: bool = True,
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        if not backoff >= 0 or not max_backoff >= 0:
            raise ValueError("backoff and max_backoff must be 0 or more seconds")
        self.model: str = (
            model
            or (default_options.model if default_options else None)
            or _env("GRAPH_AGENT_MODEL")
            or DEFAULT_MODEL
        )
        self.base_url: str = (base_url or _env("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self._api_key = checked_key(api_key if api_key is not None else _env("OPENAI_API_KEY"))
        if not isinstance(api_key_header, str) or not HEADER_NAME.fullmatch(api_key_header):
            raise ValueError(f"api_key_header must be an HTTP header name; got {api_key_header!r}")
        self._auth = KeyAuth(self._api_key, api_key_header) if self._api_key else None
        self._url = _completions_url(self.base_url)
        self._shown_url = shown_url(self._url)
        self._secrets = Secrets((self._api_key, *url_passwords(self.base_url)))
        self.timeout = timeout
        self._idle_setting: float | _UpToTimeout | None = _UP_TO_TIMEOUT
        if not isinstance(stream_idle_timeout, _UpToTimeout):
            self.stream_idle_timeout = stream_idle_timeout
        self.max_retries = max_retries
        self.supports_native_output = supports_native_output
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
        return f"OpenAIChatModel(model={self.model!r}, base_url={shown_url(self.base_url)!r})"

    @property
    def url(self) -> str:
        """Where requests go: ``{base_url}/chat/completions`` (a query in ``base_url`` stays
        at the end)."""
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
            "User-Agent": _USER_AGENT,
            **self.extra_headers,
        }

    @property
    def stream_idle_timeout(self) -> float | None:
        """Seconds a stream may go without an event before it fails (``None``: no such
        deadline). Unless set, 60 s, or the read timeout of ``timeout`` when that is shorter:
        ``timeout=1.0`` bounds a stalled stream too. (A client passed in keeps its own
        timeout, which bounds a silent stream; this deadline also bounds one that sends only
        keep-alive comments.)"""
        if not isinstance(self._idle_setting, _UpToTimeout):
            return self._idle_setting
        timeout = self.timeout
        read = timeout.read if isinstance(timeout, httpx.Timeout) else timeout
        return (
            DEFAULT_STREAM_IDLE_TIMEOUT if read is None else min(read, DEFAULT_STREAM_IDLE_TIMEOUT)
        )

    @stream_idle_timeout.setter
    def stream_idle_timeout(self, seconds: float | None) -> None:
        if seconds is not None and not seconds > 0:
            raise ValueError("stream_idle_timeout must be a positive number of seconds, or None")
        self._idle_setting = seconds

    def _timeout_for(self, client: httpx.Client | httpx.AsyncClient, stream: bool) -> httpx.Timeout:
        """A stream over the model's own client waits at most the idle deadline for its next
        bytes; anything else (and every request of a client passed in) uses the client's
        timeout."""
        base, idle = client.timeout, self.stream_idle_timeout
        injected = client is self._http_client or client is self._async_http_client
        if not stream or idle is None or injected:
            return base
        return httpx.Timeout(connect=base.connect, read=idle, write=base.write, pool=base.pool)

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
        return self._parse(*perform(self._exchanges(self.request_body(prompt), stream=False)))

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        """The completion as chunks (``ChatResponse.merge`` folds them). The request is made
        on the first ``next()``; a stream cut short raises ``ModelError`` after its chunks."""
        return stream(self._streamed(self.request_body(prompt, stream=True)))

    async def acall(self, prompt: Prompt) -> ChatResponse:
        """The async twin of ``call``."""
        body = self.request_body(prompt)
        return self._parse(*await aperform(self._exchanges(body, stream=False)))

    def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        """The async twin of ``stream``."""
        return astream(self._streamed(self.request_body(prompt, stream=True)))

    # --- internals ------------------------------------------------------------------------
    #
    # The logic is written once, as generators of effects (``checkpoint.effects``; a stream's
    # reads are ``Pull``s, see ``graph_agent._runtime.streams``): the drivers only do the I/O.
    # The text of a failed answer is masked as ``read_text`` reads it; a successful answer is
    # kept as it came, and an error found in it (an error event, a body that is no
    # completion) carries masked text and is raised again ``unframed``, from a frame holding
    # none of that text.

    def _parse(self, response: httpx.Response, text: str) -> ChatResponse:
        status = response.status_code
        try:
            return parse_completion(json.loads(text), status=status, body=text, redact=self._redact)
        except ModelError as error:
            failure = unframed(error)
        except ValueError as error:
            failure = ModelError(
                f"HTTP {status} from POST {self._shown_url} but the body is not JSON ({error})",
                status=status,
                body=truncate(self._redact(text)),
            )
        del text  # a traceback shows the locals of this frame
        raise failure

    def _streamed(self, body: dict[str, Any]) -> Streamed[ChatResponse, None]:
        """The chunks of a stream request: its events, or the one JSON answer a server gave
        instead (the events, when that body is an event stream after all)."""
        response, _ = yield from self._exchanges(body, stream=True)
        status = response.status_code
        try:
            if _is_json(response):
                text = yield from read_text(response, self._redact)
                if _looks_like_sse(text):
                    pieces = Pull.of([text.encode()])  # the body, read as the stream it is
                    yield from sse_chunks(pieces, status=status, redact=self._redact)
                else:
                    yield self._parse(response, text)
                return
            yield from sse_chunks(
                body_of(response),
                status=status,
                redact=self._redact,
                idle=self.stream_idle_timeout,
            )
            return
        except httpx.HTTPError as error:
            raise self._interrupted(error, _read_timeout(response)) from error
        except ModelError as error:
            failure = unframed(error)  # the frames it left held the answer's text
            text = ""  # and so did this one
        finally:
            yield Close(response)
        raise failure

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

    def _exchanges(self, body: dict[str, Any], stream: bool) -> Steps[tuple[httpx.Response, str]]:
        """POST ``body``, retrying what a retry can change (``checkpoint.retry.retried``,
        each POST a ``_Post``): the successful response and its text, redacted (a stream's
        response is left unread, with text ``""``); ``ModelError`` when it fails."""
        logger.debug("POST %s (model=%s, stream=%s)", self._shown_url, body["model"], stream)
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
            return self._retry_delay(attempt, None, _describe(error))
        return None

    def _retry_delay(self, attempt: int, response: httpx.Response | None, reason: str) -> float:
        """How long to wait after failed attempt ``attempt``: the server's ``Retry-After`` when
        it gives one, else exponential backoff plus up to 25 % jitter; never more than
        ``max_backoff``."""
        delay = retry_after(response.headers) if response is not None else None
        if delay is None:
            delay = Backoff(self.backoff, 2.0, self.max_backoff, spread=(1.0, 1.25)).delay(attempt)
        delay = max(0.0, min(delay, self.max_backoff))
        logger.warning(
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

    def _http_error(self, status: int, text: str, attempts: int) -> ModelError:
        try:
            detail = error_detail(json.loads(text))
        except ValueError:
            detail = None
        message = f"HTTP {status} from POST {self._shown_url}{self._attempts(attempts)}"
        if detail:
            message += f": {detail}"
        return ModelError(self._redact(message), status=status, body=truncate(self._redact(text)))

    def _failed(self, error: httpx.HTTPError, attempts: int) -> ModelError:
        return ModelError(
            self._redact(
                f"POST {self._shown_url} failed{self._attempts(attempts)}: {_describe(error)}"
            )
        )

    def _interrupted(self, error: httpx.HTTPError, read_timeout: float | None) -> ModelError:
        """The error of a stream that broke off after its answer began; a stream that went
        silent for its read timeout says so."""
        if isinstance(error, httpx.ReadTimeout) and read_timeout is not None:
            message = (
                f"the stream from POST {self._shown_url} stalled: nothing came for {read_timeout:g} s "
                "(ReadTimeout); raise stream_idle_timeout (or timeout) if the server is just slow"
            )
        else:
            message = f"the stream from POST {self._shown_url} broke off: {_describe(error)}"
        return ModelError(self._redact(message), status=200)


class _Post(Effect):
    """One POST of a request, its response left unread: ``run`` sends it with the model's
    sync httpx client, ``arun`` with its async one."""

    __slots__ = ("body", "model", "stream")

    def __init__(self, model: OpenAIChatModel, body: dict[str, Any], stream: bool) -> None:
        self.model, self.body, self.stream = model, body, stream

    def run(self, context: Any) -> httpx.Response:
        model = self.model
        client = model.http_client
        request = model._request(client, self.body, self.stream)
        return client.send(request, stream=True, auth=model._auth)

    def arun(self, context: Any) -> Awaitable[httpx.Response]:
        model = self.model
        client = model.async_http_client
        request = model._request(client, self.body, self.stream)
        return client.send(request, stream=True, auth=model._auth)


class _Refused(Exception):
    """An attempt the server answered with an error status: a failure to ``retried``, turned
    into ``ModelError`` when it is not retried."""

    def __init__(self, response: httpx.Response, text: str) -> None:
        super().__init__(response.status_code)
        self.response = response
        self.text = text


def _describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _read_timeout(response: httpx.Response) -> float | None:
    """The read timeout the request of ``response`` was sent with."""
    timeout = response.request.extensions.get("timeout", {})
    read = timeout.get("read") if isinstance(timeout, dict) else None
    return read if isinstance(read, (int, float)) else None


def _looks_like_sse(text: str) -> bool:
    """A body labelled JSON that is an event stream (some proxies label streams so)."""
    start = text.lstrip()[:6]
    return start.startswith(("data:", "event:", ":"))


def _is_json(response: httpx.Response) -> bool:
    """Whether a server answered a stream request with one JSON document instead."""
    return str(response.headers.get("content-type", "")).startswith("application/json")
