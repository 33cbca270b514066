"""What ``graph-agent chat`` prints when something fails: one line, no secret.

Every failure of a chat turn (the model server down or refusing the key, Redis gone, a bug)
becomes one line saying what failed, where, and how to fix it; the chat goes on. Secrets
(the API key, the password of the model's base URL and of the ``--saver`` URL) are masked
as ``***`` in everything the CLI prints.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from checkpoint import CheckpointError

from ..errors import GraphAgentError, ModelError

__all__ = [
    "Masker",
    "describe_failure",
    "describe_saver_error",
    "mask_url",
    "redis_login_failure",
    "url_password",
]

# ``scheme://user:password@`` anywhere in a text: the password becomes ***. ``PASSWORD`` is
# the placeholder of the fixes we suggest (``redis://:PASSWORD@host:port/0``): it stays.
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*):(?!PASSWORD@)[^@\s]*@")
_QUERY_PASSWORD = re.compile(r"(?i)(?P<head>(?:^|&)(?:password|passwd|pwd)=)[^&]*")
_MIN_SECRET = 4  # shorter "secrets" would mask ordinary text; URLs are masked by pattern
_MAX_LINE = 600


def url_password(url: str) -> str | None:
    """The password in ``url``'s user info or ``password=`` query value, or ``None``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return None
    if password:
        return password
    match = re.search(r"(?i)(?:^|&)(?:password|passwd|pwd)=([^&]+)", parts.query)
    return match.group(1) if match else None


def mask_url(url: str) -> str:
    """``url`` with the password of its user info, and any ``password=`` query value, as
    ``***`` (``redis://:secret@host:6379/0`` -> ``redis://:***@host:6379/0``). Specs that
    are not URLs (``memory``, ``sqlite:PATH``) come back unchanged."""
    if "://" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return _USERINFO.sub(r"\g<head>:***@", url)
    netloc = parts.netloc
    userinfo, at, host = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.partition(':')[0]}:***@{host}"
    query = _QUERY_PASSWORD.sub(r"\g<head>***", parts.query)
    return urlunsplit(parts._replace(netloc=netloc, query=query))


class Masker:
    """Masks known secrets (and the password of any URL) in a text, as ``***``."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        found: set[str] = set()
        for secret in secrets:
            if secret and len(secret) >= _MIN_SECRET:
                found.update({secret, unquote(secret)})
        self._secrets = sorted(found, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return _USERINFO.sub(r"\g<head>:***@", text)


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error``, then its causes and contexts, each once."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _text(error: BaseException) -> str:
    text = str(error).strip().rstrip(".")  # a sentence of its own inside ours
    return text or type(error).__name__


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_LINE else text[: _MAX_LINE - 3] + "..."


def _model_failure(error: ModelError, model: str) -> str:
    text = _text(error)
    causes = list(_chain(error))
    if any(isinstance(e, httpx.ConnectError) for e in causes):
        return (
            f"cannot reach the model server: {text}; start it, or set OPENAI_BASE_URL to where "
            "it runs (then /retry)"
        )
    if any(isinstance(e, httpx.TimeoutException) for e in causes):
        return f"the model server did not answer in time: {text}; /retry, or check the server"
    status = error.status
    if status == 401:
        return (
            f"the model server rejected the API key: {text}; set OPENAI_API_KEY to a valid key "
            "for this server (a local server may need none: unset it)"
        )
    if status == 403:
        return (
            f"the model server refused access: {text}; check that the key (OPENAI_API_KEY) may "
            f"use the model '{model}'"
        )
    if status == 404:
        now = f" (now '{model}')" if model else ""
        return (
            f"the model server has no such endpoint or model: {text}; check GRAPH_AGENT_MODEL"
            f"{now} and OPENAI_BASE_URL (it usually ends in /v1)"
        )
    if status == 429:
        return f"the model server is rate-limiting: {text}; wait a moment, then /retry"
    if status is not None and status >= 500:
        return f"the model server failed: {text}; /retry later"
    return f"the model call failed: {text}; /retry, or send another message"


def _with_password(url: str) -> str:
    """``url`` (masked or not) with ``PASSWORD`` as its password: how to write the fix."""
    generic = "redis://:PASSWORD@HOST:PORT/DB"
    if "://" not in url:
        return generic
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return generic
    host = f"[{host}]" if ":" in host else host
    netloc = f"{parts.username or ''}:PASSWORD@{host}{f':{port}' if port else ''}"
    query = _QUERY_PASSWORD.sub("", parts.query).strip("&")
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def redis_login_failure(url: str, password_given: bool) -> str:
    """Our sentence for a Redis server refusing the login of ``url`` (masked), instead of
    Redis's own text (``HELLO must be called with the client already authenticated ...``):
    it needs a password the URL does not give, or refused the one it gives."""
    if password_given:
        return (
            f"the Redis server at {url} refused the password in the URL: put the right one "
            f"in it, {_with_password(url)}"
        )
    return f"the Redis server at {url} needs a password: put it in the URL, {_with_password(url)}"


def _redis_failure(error: BaseException, where: str) -> str | None:
    try:
        import redis
    except ImportError:  # pragma: no cover - redis is a dependency
        return None
    text = _text(error)
    if isinstance(error, redis.AuthenticationError):
        given = "://" in where and url_password(where) is not None
        return f"{redis_login_failure(where, given)}, and start the chat again"
    if isinstance(error, redis.exceptions.NoPermissionError):
        return f"Redis at {where} denied a command: {text}; grant the saver's commands to that user"
    if isinstance(error, (redis.ConnectionError, redis.TimeoutError)):
        return (
            f"cannot reach Redis at {where}: {text}; check that it runs, then /retry or send "
            "your message again"
        )
    if isinstance(error, redis.RedisError):
        return f"Redis at {where} failed: {text}"
    return None


def describe_saver_error(error: BaseException, saver: str) -> str | None:
    """One line for a failure of the conversation store ``saver`` (a masked spec), or
    ``None`` when ``error`` did not come from it."""
    for cause in _chain(error):
        line = _redis_failure(cause, saver)
        if line is not None:
            return line
    if isinstance(error, CheckpointError):
        return f"the conversation store {saver} failed: {_text(error)}"
    for cause in _chain(error):
        if type(cause).__module__ == "sqlite3":
            return (
                f"the conversation store {saver} failed: {_text(cause)}; check the file and /retry"
            )
    return None


def describe_failure(error: BaseException, *, model: str, saver: str, mask: Masker) -> str:
    """One line (secrets masked) for a failed chat turn: what failed, where, how to fix it.

    ``model`` is the model's name, ``saver`` the masked ``--saver`` spec."""
    model_error = next((e for e in _chain(error) if isinstance(e, ModelError)), None)
    if model_error is not None:
        line = _model_failure(model_error, model)
    elif (found := describe_saver_error(error, saver)) is not None:
        line = found
    elif isinstance(error, GraphAgentError):  # e.g. max_iterations: its message says it all
        line = f"{type(error).__name__}: {_text(error)}"
    else:  # a bug somewhere: the traceback is one setting away
        line = f"{type(error).__name__}: {_text(error)} (GRAPH_AGENT_DEBUG=1 shows the traceback)"
    return _one_line(mask(line))
