"""Where ``graph-agent chat`` keeps a conversation: the ``--saver`` spec made into a saver,
and a Redis server tried once before the chat starts."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from checkpoint import BaseCheckpointSaver, CheckpointError, MemorySaver

from ._errors import CliError
from ._failures import Masker, mask_url, redis_login_failure, url_password

__all__ = ["check_saver", "close_saver", "make_saver"]


def make_saver(spec: str) -> BaseCheckpointSaver:
    """``memory``, ``sqlite:PATH`` or a ``redis://`` / ``rediss://`` / ``unix://`` URL (Redis
    connects lazily: ``check_saver`` tries it). ``CliError`` for a spec that cannot work,
    its password masked."""
    from checkpoint import RedisSaver, SqliteSaver

    shown, mask = mask_url(spec), Masker([url_password(spec)])
    if spec == "memory":
        return MemorySaver()
    if spec.startswith("sqlite:"):
        path = Path(spec.removeprefix("sqlite:")).expanduser()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return SqliteSaver(path)
        except (OSError, CheckpointError, sqlite3.Error) as error:
            raise CliError(
                f"--saver {shown}: cannot open the SQLite file: {mask(str(error))}"
            ) from None
    if spec.startswith(
        ("redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://")
    ):
        cluster = "+cluster://" in spec
        try:
            return RedisSaver.from_url(spec.replace("+cluster://", "://", 1), cluster=cluster)
        except ValueError as error:
            raise CliError(
                f"--saver {shown} is not a Redis URL that works: {mask(str(error))}; expected "
                "redis://[:PASSWORD@]HOST:PORT/DB"
            ) from None
    raise CliError(f"--saver must be memory, sqlite:PATH or a redis:// URL, got {shown!r}")


def check_saver(saver: BaseCheckpointSaver, spec: str) -> None:
    """Connect a Redis saver once (a wrong password or an unreachable server is found now,
    not in the middle of the first answer); ``CliError`` with a fix when that fails. A
    refused login is our own sentence (needs a password, or refused the one given), not
    Redis's text."""
    client = getattr(saver, "client", None)
    if client is None or not hasattr(client, "ping"):
        return
    import redis

    shown, mask = mask_url(spec), Masker([url_password(spec)])
    try:
        client.ping()
    except redis.AuthenticationError:
        raise CliError(redis_login_failure(shown, url_password(spec) is not None)) from None
    except (redis.ConnectionError, redis.TimeoutError) as error:
        raise CliError(
            f"--saver {shown}: cannot reach Redis ({mask(str(error))}): start it, or fix the "
            "host and port in the URL"
        ) from None
    except redis.RedisError as error:
        raise CliError(f"--saver {shown}: Redis failed: {mask(str(error))}") from None


def close_saver(saver: Any) -> None:
    """Close a saver the chat made (``None`` and savers without ``close`` are left)."""
    close = getattr(saver, "close", None)
    if callable(close):
        close()
