"""The check a RedisSaver makes once per client: may this server evict the saver's keys?

A server evicts only when it has a ``maxmemory`` limit. ``noeviction`` never evicts;
``volatile-*`` policies evict only keys with a TTL, which the saver's keys have when it has a
``ttl``; ``allkeys-*`` policies may evict any key, checkpoints included.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from ..effects import Steps
from ..errors import EvictionPolicyWarning
from ._errors import is_auth_failure, is_transient, translate, where_of
from ._io import Command


def evicting_policy(info: Any, ttl: int | None) -> str | None:
    """The policy (``allkeys-lru``...) under which the server(s) described by ``info`` (the
    reply to ``INFO memory``: one node's mapping, or a cluster's mapping of node to mapping)
    may evict the saver's keys; ``None`` when they cannot."""
    nodes = [info] if isinstance(info, Mapping) and "maxmemory_policy" in info else []
    if not nodes and isinstance(info, Mapping):
        nodes = [node for node in info.values() if isinstance(node, Mapping)]
    for node in nodes:
        policy = node.get("maxmemory_policy")
        policy = policy.decode() if isinstance(policy, bytes) else str(policy or "noeviction")
        if int(node.get("maxmemory", 0) or 0) == 0 or policy == "noeviction":
            continue
        if policy.startswith("allkeys-") or (ttl is not None and policy.startswith("volatile-")):
            return policy
    return None


def warn_if_evicting(info: Any, ttl: int | None, where: str) -> None:
    """Warn (``EvictionPolicyWarning``) when the server may evict checkpoints."""
    policy = evicting_policy(info, ttl)
    if policy is None:
        return
    keys = "any key" if policy.startswith("allkeys-") else "keys with a TTL (the saver's ttl)"
    warnings.warn(
        f"Redis at {where} has a maxmemory limit and maxmemory-policy {policy}: when it fills "
        f"up it evicts {keys}, checkpoints included, and a thread that lost a key fails to load "
        "with CheckpointDataError. Set maxmemory-policy noeviction (CONFIG SET maxmemory-policy "
        "noeviction, or in redis.conf), or keep checkpoints in a Redis of their own "
        "(docs/redis.md, Durability).",
        EvictionPolicyWarning,
        stacklevel=4,
    )


def on_memory_info(
    info: Any, client: Any, ttl: int | None, thread_id: str, operation: str
) -> int | None:
    """Act on the reply to ``INFO memory`` (or the error it raised): warn when the server may
    evict checkpoints. A timeout or refused credentials raise the saver's error at once (the
    command that follows would fail the same way, after as long a wait); a lost connection
    leaves the check for next time (the command that follows retries it). A server that
    refuses ``INFO`` (an ACL without it, a managed service) is not checked. Returns ``id(client)`` when
    the client is checked, else ``None``."""
    if isinstance(info, BaseException):
        if is_transient(info):
            return None
        import redis

        # a refused login fails every command; an ACL that only denies INFO (NOPERM) does not
        refused_login = is_auth_failure(info) and not isinstance(
            info, redis.exceptions.NoPermissionError
        )
        if isinstance(info, redis.TimeoutError) or refused_login:
            raise translate(info, client=client, thread_id=thread_id, operation=operation) from info
        return id(client)
    warn_if_evicting(info, ttl, where_of(client))
    return id(client)


def check_policy(
    checked: set[int], client: Any, ttl: int | None, thread_id: str, operation: str
) -> Steps[None]:
    """Ask ``client``'s server for ``INFO memory`` and act on the reply (``on_memory_info``);
    ``checked`` (ids of the clients already checked) gains the client once it is checked.
    The caller asks only for a client not in ``checked``."""
    try:
        info: Any = yield Command(client.info, "memory")
    except Exception as error:
        import redis

        if not isinstance(error, redis.RedisError):
            raise
        info = error
    done = on_memory_info(info, client, ttl, thread_id, operation)
    if done is not None:
        checked.add(done)
