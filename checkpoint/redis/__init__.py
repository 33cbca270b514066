"""Redis (plain Redis 7 or Valkey, no modules; single node or cluster): the checkpoint saver
``RedisSaver`` and the long-term memory store ``RedisStore``.

Inside this package ``import redis`` is redis-py: imports are absolute.
"""

from __future__ import annotations

from .saver import DEFAULT_CONNECT_TIMEOUT, DEFAULT_SOCKET_TIMEOUT, RedisSaver
from .store import RedisStore

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "DEFAULT_SOCKET_TIMEOUT", "RedisSaver", "RedisStore"]
