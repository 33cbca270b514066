"""What a RedisSaver says when Redis fails: one clear error per cause, naming the server
(never the password), the thread, and what to do; and which failures are worth retrying."""

from __future__ import annotations

import logging
import re
from typing import Any

from ..errors import (
    CheckpointAuthError,
    CheckpointError,
    CheckpointTimeoutError,
    CheckpointUnavailableError,
)
from ..retry import Backoff

_log = logging.getLogger("checkpoint.redis")

_DOING = {
    "read": "reading",
    "write": "writing",
    "delete": "deleting",
    "list": "listing",
    "lease": "changing the lease of",
    "lease holder": "reading the lease of",
}
_MAYBE_WRITTEN = (
    " The write is atomic: the step is stored whole or not at all, and may have landed before "
    "the failure; reload the thread (get_state) before doing it again."
)


def where_of(client: Any) -> str:
    """Where the client connects (``host:port``, ``unix://path`` or ``cluster at host:port``),
    without credentials."""
    if client is None:
        return "?"
    if hasattr(client, "get_default_node"):
        try:
            node = client.get_default_node()
            return f"cluster at {node.host}:{node.port}"
        except Exception:
            return "cluster"
    try:
        kwargs = client.get_connection_kwargs()
    except Exception:
        return type(client).__name__
    if kwargs.get("path"):
        return f"unix://{kwargs['path']}"
    return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"


def timeout_of(client: Any) -> float | None:
    """The client's socket timeout in seconds, if it has one."""
    try:
        kwargs = client.get_connection_kwargs()
    except Exception:
        kwargs = getattr(client, "nodes_manager", None) and client.nodes_manager.connection_kwargs
    value = (kwargs or {}).get("socket_timeout")
    return float(value) if value is not None else None


def scrub(text: str) -> str:
    """Text without anything that looks like a password in a URL."""
    return re.sub(r"(://[^:/@\s]*:)[^@\s]*@", r"\1***@", text)


def retry_pause(
    error: BaseException,
    client: Any,
    thread_id: str,
    operation: str,
    attempt: int,
    retries: int,
    backoff: Backoff,
) -> float | None:
    """After failed attempt ``attempt`` (1 for the first) of ``retries + 1``: the pause before
    the next one (``backoff.delay(attempt)``), logged at WARNING on ``checkpoint.redis``; or
    ``None`` when the failure is not retried (not transient, or the last attempt)."""
    if attempt > retries or not is_transient(error):
        return None
    pause = backoff.delay(attempt)
    _log.warning(
        "Redis at %s: %s thread '%s' failed (%s: %s); retry %d of %d in %.2f s",
        where_of(client),
        _DOING.get(operation, operation),
        thread_id,
        type(error).__name__,
        scrub(str(error)),
        attempt,
        retries,
        pause,
    )
    return pause


def is_auth_failure(error: BaseException) -> bool:
    """A refused password or ACL user, or a command the ACL user may not run: retrying
    cannot help."""
    import redis
    from redis.exceptions import NoPermissionError

    if isinstance(error, (redis.AuthenticationError, NoPermissionError)):
        return True
    if type(error).__name__ == "AuthorizationError":  # redis-py 5.1 and newer
        return True
    if isinstance(error, redis.ResponseError):
        text = str(error)
        return (
            "NOPERM" in text
            or "can't run this command" in text  # NOPERM inside a script, code stripped
            or text.startswith(("NOAUTH", "WRONGPASS"))
        )
    return False


# What Redis answers when a connection did not log in, though the server wants a password
# (RESP3's HELLO, then RESP2's NOAUTH), and when the password or user is wrong.
_NOT_LOGGED_IN = ("HELLO must be called with the client already authenticated", "NOAUTH")
_NOT_LOGGED_IN_TEXT = "Authentication required"
_WRONG_LOGIN = ("WRONGPASS", "invalid username-password pair", "invalid password")


def _has_password(client: Any) -> bool | None:
    """Whether the client logs in with a password, or ``None`` when that cannot be told."""
    try:
        kwargs = client.get_connection_kwargs()
    except Exception:
        kwargs = getattr(client, "nodes_manager", None) and client.nodes_manager.connection_kwargs
    if not isinstance(kwargs, dict):
        return None
    return bool(kwargs.get("password")) or kwargs.get("credential_provider") is not None


def login_failure(error: BaseException, client: Any) -> str | None:
    """The sentence for a refused login, instead of Redis's text: the server needs a password
    and the saver sent none, or the password (or user) is wrong. ``None`` for any other
    refusal (an ACL user denied a command)."""
    text = str(error)
    missing = text.startswith(_NOT_LOGGED_IN) or _NOT_LOGGED_IN_TEXT in text
    wrong = any(marker in text for marker in _WRONG_LOGIN)
    if not (missing or wrong):
        return None
    if missing and _has_password(client) is not True:
        return (
            "the server needs a password (its requirepass, or an ACL user's) and the saver "
            "sent none. Put it in the URL, redis://:PASSWORD@host:port/0 "
            "(redis://USER:PASSWORD@host:port/0 for an ACL user), or pass password= to the "
            "client."
        )
    return (
        "the password, or the user and password, do not match the server's requirepass or "
        "ACL. Put the right ones in the URL, redis://:PASSWORD@host:port/0 "
        "(redis://USER:PASSWORD@host:port/0 for an ACL user), or in the client's "
        "username=/password=."
    )


def is_transient(error: BaseException) -> bool:
    """A lost or refused connection, or a server still loading its data after a restart:
    worth another try after a pause. Timeouts are not (the wait would repeat), nor refused
    credentials."""
    import redis

    return isinstance(error, redis.ConnectionError) and not is_auth_failure(error)


def translate(
    error: BaseException, *, client: Any, thread_id: str | None, operation: str
) -> CheckpointError:
    """The saver's error for ``error``, raised by redis-py while doing ``operation``
    (``read``, ``write``, ``delete``, ``list``) on ``thread_id``."""
    import redis

    where = where_of(client)
    doing = _DOING.get(operation, operation)
    on = f"thread '{thread_id}'" if thread_id is not None else "the saver's keys"
    detail = f"{type(error).__name__}: {scrub(str(error)).rstrip('.')}"
    maybe = _MAYBE_WRITTEN if operation == "write" else ""
    fields: dict[str, Any] = {"where": where, "thread_id": thread_id, "operation": operation}
    if is_auth_failure(error):
        login = login_failure(error, client)
        if login is not None:  # Redis's own text ("HELLO must be called ...") says it badly
            return CheckpointAuthError(
                f"Redis at {where} refused the saver's credentials while {doing} {on}: {login}"
                + maybe,
                **fields,
            )
        return CheckpointAuthError(
            f"Redis at {where} refused the saver's credentials while {doing} {on} ({detail}). "
            "Check the user and password in the URL (redis://user:PASSWORD@host:port/0) or the "
            "client's username=/password=, the server's requirepass or ACL, and that the ACL user "
            "may run the commands listed in docs/redis.md#security." + maybe,
            **fields,
        )
    if isinstance(error, redis.TimeoutError):
        seconds = timeout_of(client)
        within = f"within {seconds:g} s" if seconds is not None else "in time"
        return CheckpointTimeoutError(
            f"Redis at {where} did not answer {within} while {doing} {on} ({detail}). Is the "
            "server stalled (a long command or script, a slow disk with appendfsync always, a "
            "full network)? The limit is the client's socket_timeout: "
            "RedisSaver.from_url(url, socket_timeout=...)." + maybe,
            **fields,
        )
    if isinstance(error, redis.BusyLoadingError):
        return CheckpointUnavailableError(
            f"Redis at {where} is still loading its data after a restart, while {doing} {on}; "
            "try again in a moment." + maybe,
            **fields,
        )
    if isinstance(error, redis.ConnectionError):
        return CheckpointUnavailableError(
            f"could not reach Redis at {where} while {doing} {on} ({detail}). Is redis-server "
            "running there, and are the host, port and TLS setting (rediss://) of the URL right?"
            + maybe,
            **fields,
        )
    if isinstance(error, redis.ResponseError) and str(error).startswith("OOM"):
        return CheckpointUnavailableError(
            f"Redis at {where} is out of memory (maxmemory reached, and its maxmemory-policy "
            f"evicts nothing) while {doing} {on}; nothing was written. Raise maxmemory, set a "
            "ttl or max_retained on the saver, or delete old threads.",
            **fields,
        )
    if isinstance(error, redis.ResponseError) and str(error).startswith("READONLY"):
        return CheckpointUnavailableError(
            f"Redis at {where} is a read-only replica ({detail}) while {doing} {on}: connect the "
            "saver to the primary (or use cluster=True for a Redis Cluster).",
            **fields,
        )
    if isinstance(error, redis.ResponseError) and str(error).startswith("BUSY"):
        return CheckpointUnavailableError(
            f"Redis at {where} is busy running a long script or function ({detail}) while "
            f"{doing} {on}; try again later, or find the script with SLOWLOG GET." + maybe,
            **fields,
        )
    return CheckpointError(f"Redis at {where} failed while {doing} {on} ({detail})." + maybe)
