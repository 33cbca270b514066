"""Redis (plain Redis 7 or Valkey, no modules; single node or cluster): the checkpoint saver
``RedisSaver`` and the long-term memory store ``RedisStore`` (whose search by meaning uses the
server's Query Engine, Redis 8's, where there is one: ``_query_engine.py``).

Inside this package ``import redis`` is redis-py: imports are absolute.
"""

from __future__ import annotations

from .saver import DEFAULT_CONNECT_TIMEOUT, DEFAULT_SOCKET_TIMEOUT, RedisSaver
from .store import RedisStore

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "DEFAULT_SOCKET_TIMEOUT", "RedisSaver", "RedisStore"]
