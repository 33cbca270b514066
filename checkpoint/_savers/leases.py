"""Leases per thread, the rules every saver follows (``BaseCheckpointSaver``'s lease API):
what each operation may do given the thread's live lease, and the checks of its arguments.

A lease is a token with an expiry. ``acquire`` succeeds when the thread has no live lease or
it is already the token's, and (re)sets it for ``ttl`` seconds; ``renew`` succeeds only while
the live lease is the token's, and extends it; ``release`` drops it only if it is the token's.
``MemorySaver`` and ``SqliteSaver`` apply ``allowed`` in Python; ``RedisSaver``'s ``LEASE``
script (``redis/_lua.py``) is the same rule in Lua.
"""

from __future__ import annotations

import math
from typing import Literal

from ..base import lease_seconds

__all__ = [
    "ACQUIRE",
    "RELEASE",
    "RENEW",
    "Op",
    "allowed",
    "check_args",
    "check_fence",
    "check_thread",
    "milliseconds",
]

Op = Literal["acquire", "renew", "release"]
ACQUIRE: Op = "acquire"
RENEW: Op = "renew"
RELEASE: Op = "release"


def allowed(op: Op, holder: str | None, token: str) -> bool:
    """Whether ``op`` by ``token`` goes ahead when the thread's live lease is ``holder``
    (``None``: no live lease)."""
    if op == ACQUIRE:
        return holder is None or holder == token
    return holder == token


def check_args(method: str, thread_id: object, token: object, ttl_seconds: object = 1.0) -> float:
    """Raise a ``TypeError``/``ValueError`` naming ``method`` and the fix for a bad argument;
    return ``ttl_seconds`` as a float."""
    check_thread(method, thread_id)
    if not isinstance(token, str) or not token:
        raise TypeError(
            f"{method}(token=...) must be a non-empty str naming the lease's holder "
            f"(worker, run and attempt), got {token!r}"
        )
    return lease_seconds(f"{method}(ttl_seconds=...)", ttl_seconds)


def check_thread(method: str, thread_id: object) -> None:
    """Raise a ``TypeError`` naming ``method`` for a thread id that is not a non-empty str."""
    if not isinstance(thread_id, str) or not thread_id:
        raise TypeError(f"{method}(thread_id=...) must be a non-empty str, got {thread_id!r}")


def check_fence(method: str, fence: object) -> None:
    """Raise a ``TypeError`` for a ``fence`` that is not ``None`` or a non-empty str."""
    if fence is not None and (not isinstance(fence, str) or not fence):
        raise TypeError(
            f"{method}(fence=...) must be the writer's lease token (a non-empty str) or None, "
            f"got {fence!r}"
        )


def milliseconds(ttl_seconds: float) -> int:
    """``ttl_seconds`` as whole milliseconds, at least one (Redis's ``PX``)."""
    return max(1, math.ceil(ttl_seconds * 1000))
