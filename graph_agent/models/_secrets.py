"""Keeping the API key secret: checked and kept in one object that adds it to requests, and
masked in what we show of a server's text.

Servers echo the key they were sent (OpenAI's 401 quotes it masked, proxies and some
compatible servers quote it whole). ``Secrets.redact`` masks it in the text of a failed
answer as that text is read, and in every message, body, log record and ``repr`` we make.
A successful answer is never rewritten: a model may write the key (or, with a placeholder
key such as ``"ollama"``, the word) in its answer, and the answer is the model's. A
``ModelError`` raised while a successful answer is read leaves the frames it was raised
through behind (``unframed``), so a traceback printed with its locals does not show the
unmasked text those frames read.

Only a key that can be told apart from ordinary text is searched for: one of at least
``MIN_SECRET_LENGTH`` characters that is not a well-known placeholder (``PLACEHOLDER_KEYS``).
Masking ``"k"`` or ``"ollama"`` would mangle every text that holds the letter or the word,
and a placeholder protects nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Generator, Iterable
from typing import Any

import httpx

from checkpoint.effects import Effect, Steps

from .._runtime.streams import END, Pull
from ..errors import ModelError

__all__ = [
    "HEADER_NAME",
    "MASK",
    "MIN_SECRET_LENGTH",
    "PLACEHOLDER_KEYS",
    "Close",
    "KeyAuth",
    "Secrets",
    "body_of",
    "checked_key",
    "read_text",
    "searchable",
    "shown_url",
    "unframed",
    "url_passwords",
]

MASK = "***"
MIN_SECRET_LENGTH = 16
"""Shorter keys and passwords are not searched for in a server's text (see the module's
docstring); every provider's real key is longer (OpenAI's, Azure's and DashScope's have 32
characters or more)."""
PLACEHOLDER_KEYS = frozenset(
    {"sk-no-key-required", "sk-no-key-needed", "no-key-required", "not-needed", "placeholder"}
)
"""Keys that local servers' docs tell users to pass (llama.cpp's ``sk-no-key-required``
...), compared without case; the shorter ones (``ollama``, ``EMPTY``, ``none``,
``lm-studio``) are below ``MIN_SECRET_LENGTH`` anyway."""


def searchable(secret: str) -> bool:
    """Whether ``secret`` is masked where it appears in a server's text."""
    return len(secret) >= MIN_SECRET_LENGTH and secret.lower() not in PLACEHOLDER_KEYS


def _forms(secret: str) -> set[str]:
    """The ways a secret can appear in a server's text: as sent, and JSON-escaped, as it is
    quoted inside a JSON error body (``"`` and ``\\`` escaped, ``/`` too by some encoders)."""
    escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
    return {secret, escaped, escaped.replace("/", "\\/")}


class Secrets:
    """The strings what we show must not carry (those ``searchable`` allows). ``repr`` never
    shows them."""

    __slots__ = ("_texts",)

    def __init__(self, secrets: Iterable[str | None]) -> None:
        forms = set().union(*(_forms(s) for s in secrets if s and searchable(s)))
        self._texts = tuple(sorted(forms, key=len, reverse=True))  # longest first

    def __repr__(self) -> str:
        return "Secrets(***)"

    def __bool__(self) -> bool:
        return bool(self._texts)

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``."""
        for secret in self._texts:
            if secret in text:
                text = text.replace(secret, MASK)
        return text


_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^/?#@:]*:)[^/?#@]*@")


def shown_url(url: str) -> str:
    """``url`` with the password of its user info, whatever its length, shown as ``***``."""
    return _USERINFO.sub(rf"\g<1>{MASK}@", url, count=1)


def unframed(error: ModelError) -> ModelError:
    """``error`` without the traceback it was raised with, nor an exception it suppressed
    (``raise ... from None``): the locals of those frames may hold the unmasked text of an
    answer. Its message and body are masked already; raise it again from a frame that holds
    no such text."""
    error.__traceback__ = None
    if error.__suppress_context__:
        error.__context__ = None
    return error


def checked_key(key: str | None) -> str | None:
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


class KeyAuth(httpx.Auth):
    """Adds the key header to each request; the one place the key is kept.

    ``Authorization: Bearer <key>`` by default; ``api-key: <key>`` (Azure's deployment
    endpoints) or any other header name sends the bare key.
    """

    __slots__ = ("_name", "_value")

    def __init__(self, key: str, header: str) -> None:
        self._name = header
        self._value = f"Bearer {key}" if header.lower() == "authorization" else key

    def __repr__(self) -> str:
        return f"KeyAuth({self._name}: ***)"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers[self._name] = self._value
        yield request


HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def url_passwords(base_url: str) -> list[str]:
    """The password of ``base_url``, decoded and as written (percent-encoded)."""
    url = httpx.URL(base_url)
    written = url.userinfo.partition(b":")[2].decode("ascii", "replace")
    return [password for password in (url.password, written) if password]


class Close(Effect):
    """Close a response (``close`` / ``aclose``); closing it again does nothing."""

    __slots__ = ("response",)

    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    def run(self, context: Any) -> None:
        self.response.close()

    def arun(self, context: Any) -> Awaitable[None]:
        return self.response.aclose()


def body_of(response: httpx.Response) -> Pull[bytes]:
    """The body of an unread response, piece by piece (``iter_bytes`` / ``aiter_bytes``:
    httpx keeps no copy of what they read)."""
    return Pull(response.iter_bytes, response.aiter_bytes)


def read_text(response: httpx.Response, redact: Callable[[str], str]) -> Steps[str]:
    """The whole body of an unread response as text; the response is closed. A failed
    answer's text is redacted as it is read (httpx keeps no copy, see ``body_of``), a
    successful one's is kept as the server sent it. A failed answer whose body breaks off
    gives ``""``: its status says what happened."""
    read, pieces = body_of(response), []
    try:
        while (piece := (yield read)) is not END:
            pieces.append(piece)
        text = b"".join(pieces).decode(response.encoding or "utf-8", "replace")
        return text if response.is_success else redact(text)
    except httpx.HTTPError:
        if response.is_success:
            raise
        return ""
    finally:
        yield Close(response)
