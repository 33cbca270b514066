"""Keeping the API key secret: checked and kept in one object that adds it to requests, and
masked in what a server sends back.

Servers echo the key they were sent (OpenAI's 401 quotes it masked, proxies and some
compatible servers quote it whole). ``Secrets.redact`` masks it in text; ``Scrubber`` masks
it in a byte stream read piece by piece, where the key may be split across two pieces.
``OpenAIChatModel`` applies them where the server's bytes are read, so no local variable,
attribute or exception of ours ever holds the whole key (tracebacks that show their locals,
as Sentry and ``pytest -l`` do, would pass it on).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterable, AsyncIterator, Callable, Generator, Iterable, Iterator

import httpx

from ..errors import ModelError

__all__ = [
    "HEADER_NAME",
    "MASK",
    "KeyAuth",
    "Scrubber",
    "Secrets",
    "aread_text",
    "checked_key",
    "read_text",
    "url_passwords",
]

MASK = "***"
_MASK_BYTES = MASK.encode()


def _forms(secret: str) -> set[str]:
    """The ways a secret can appear in a server's text: as sent, and JSON-escaped, as it is
    quoted inside a JSON error body (``"`` and ``\\`` escaped, ``/`` too by some encoders)."""
    escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
    return {secret, escaped, escaped.replace("/", "\\/")}


class Secrets:
    """The strings a server's text must not carry on. ``repr`` never shows them."""

    __slots__ = ("_bytes", "_texts")

    def __init__(self, secrets: Iterable[str | None]) -> None:
        forms = set().union(*(_forms(secret) for secret in secrets if secret))
        self._texts = tuple(sorted(forms, key=len, reverse=True))  # longest first
        self._bytes = tuple(form.encode() for form in self._texts)

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

    def scrubber(self) -> Scrubber | None:
        """A ``Scrubber`` for one byte stream; ``None`` when there is nothing to hide."""
        return Scrubber(self._bytes) if self._bytes else None


class Scrubber:
    """Masks secrets in a byte stream given in pieces.

    ``feed`` returns the piece with every secret masked, minus a tail that may be the start
    of a secret split across pieces: that tail is held until the next piece shows whether it
    is one (``flush`` returns what is held at the end). A held tail is a proper prefix of a
    secret, so it is never a whole secret and, as secrets hold no line breaks, it never holds
    back the end of an event line.
    """

    __slots__ = ("_bytes_used", "_held", "_secrets")

    def __init__(self, secrets: tuple[bytes, ...]) -> None:
        self._secrets = secrets
        self._bytes_used = frozenset(byte for secret in secrets for byte in secret)
        self._held = b""

    def __repr__(self) -> str:
        return f"Scrubber({len(self._held)} bytes held)"

    def feed(self, data: bytes) -> bytes:
        if self._held:
            data, self._held = self._held + data, b""
        for secret in self._secrets:
            if secret in data:
                data = data.replace(secret, _MASK_BYTES)
        keep = self._open_tail(data)
        if keep:
            data, self._held = data[:-keep], data[-keep:]
        return data

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return held

    def _open_tail(self, data: bytes) -> int:
        """The length of the longest end of ``data`` that begins some secret (0: none)."""
        if not data or data[-1] not in self._bytes_used:
            return 0  # the usual case: a read that ends in a line break
        best = len(data)
        for secret in self._secrets:
            first = secret[:1]
            position = data.find(first, max(0, len(data) - len(secret) + 1))
            while 0 <= position < best:
                if secret.startswith(data[position:]):
                    best = position
                    break
                position = data.find(first, position + 1)
        return len(data) - best

    def pieces(self, data: Iterable[bytes]) -> Iterator[bytes]:
        """The pieces of ``data``, scrubbed (empty ones left out), then the held tail."""
        for piece in data:
            piece = self.feed(piece)  # the unscrubbed piece is not kept
            if piece:
                yield piece
        tail = self.flush()
        if tail:
            yield tail

    async def apieces(self, data: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
        """The async form of ``pieces``."""
        async for piece in data:
            piece = self.feed(piece)  # the unscrubbed piece is not kept
            if piece:
                yield piece
        tail = self.flush()
        if tail:
            yield tail


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


def _decode(raw: bytes, response: httpx.Response) -> str:
    return raw.decode(response.encoding or "utf-8", "replace")


def read_text(response: httpx.Response, redact: Callable[[str], str]) -> str:
    """The whole body of an unread response as text, redacted as it is read (httpx keeps no
    copy: ``iter_bytes`` does not store the body on the response); the response is closed.
    A failed answer whose body breaks off gives ``""``: its status says what happened."""
    try:
        return redact(_decode(b"".join(response.iter_bytes()), response))
    except httpx.HTTPError:
        if response.is_success:
            raise
        return ""
    finally:
        response.close()


async def aread_text(response: httpx.Response, redact: Callable[[str], str]) -> str:
    """The async twin of ``read_text``."""
    try:
        return redact(
            _decode(b"".join([piece async for piece in response.aiter_bytes()]), response)
        )
    except httpx.HTTPError:
        if response.is_success:
            raise
        return ""
    finally:
        await response.aclose()
