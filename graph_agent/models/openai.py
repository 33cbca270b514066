"""``OpenAIChatModel``: the OpenAI chat-completions API over httpx.

The same wire format serves OpenAI, DashScope compatible mode (Qwen), vLLM, Ollama and
llama.cpp servers: point ``base_url`` at them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any

import httpx

from checkpoint.effects import aperform, perform

from .._runtime.streams import Pull, Streamed, astream, stream
from ..errors import ModelError
from ._openai_http import (
    DEFAULT_BASE_URL,
    NOT_RETRIED_5XX,
    RETRYABLE_STATUS,
    OpenAIEndpoint,
    describe,
    env,
)
from ._openai_wire import build_body, parse_completion, truncate
from ._secrets import Close, body_of, read_text, unframed
from ._sse import sse_chunks
from .types import ChatOptions, ChatResponse, Prompt

__all__ = ["DEFAULT_BASE_URL", "NOT_RETRIED_5XX", "RETRYABLE_STATUS", "OpenAIChatModel"]

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_STREAM_IDLE_TIMEOUT = 60.0


class _UpToTimeout:
    """The default ``stream_idle_timeout``: 60 s, or the read timeout when that is shorter."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "min(60.0, timeout)"


_UP_TO_TIMEOUT = _UpToTimeout()


class OpenAIChatModel(OpenAIEndpoint):
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
    path = "chat/completions"
    _log = logger

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
        self.model: str = (
            model
            or (default_options.model if default_options else None)
            or env("GRAPH_AGENT_MODEL")
            or DEFAULT_MODEL
        )
        self._idle_setting: float | _UpToTimeout | None = _UP_TO_TIMEOUT
        if not isinstance(stream_idle_timeout, _UpToTimeout):
            self.stream_idle_timeout = stream_idle_timeout
        self.supports_native_output = supports_native_output
        self.default_options = default_options
        self.extra_body = dict(extra_body or {})

    # --- the stream's deadline ------------------------------------------------------------

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

    def _interrupted(self, error: httpx.HTTPError, read_timeout: float | None) -> ModelError:
        """The error of a stream that broke off after its answer began; a stream that went
        silent for its read timeout says so."""
        if isinstance(error, httpx.ReadTimeout) and read_timeout is not None:
            message = (
                f"the stream from POST {self._shown_url} stalled: nothing came for {read_timeout:g} s "
                "(ReadTimeout); raise stream_idle_timeout (or timeout) if the server is just slow"
            )
        else:
            message = f"the stream from POST {self._shown_url} broke off: {describe(error)}"
        return ModelError(self._redact(message), status=200)


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
