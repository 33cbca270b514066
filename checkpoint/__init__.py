"""Checkpoint savers: where a graph's threads are kept between steps, runs and restarts.

This package imports nothing from ``graph_agent`` or ``hooks``.
"""

from __future__ import annotations

import logging

from ._savers.ids import created_at_of, new_checkpoint_id, new_run_id
from .base import BaseCheckpointSaver, Checkpoint, CheckpointDelta, lease_seconds, supports_leases
from .errors import (
    CheckpointAuthError,
    CheckpointConflictError,
    CheckpointDataError,
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointPathError,
    CheckpointTimeoutError,
    CheckpointUnavailableError,
    EvictionPolicyWarning,
    LeaseBusyError,
    LeaseLostError,
    SerializationError,
    UnserializableValueError,
)
from .memory import MemorySaver
from .redis import RedisSaver, RedisStore
from .serde import Serializer, TypeRegistry, default_registry, default_serializer, register_type
from .sqlite import SqliteSaver
from .store import BaseStore, Item, MemoryStore, SqliteStore

# Nothing prints until the application configures logging (see graph_agent/__init__.py).
logging.getLogger("checkpoint").addHandler(logging.NullHandler())

__all__ = [
    "BaseCheckpointSaver",
    "BaseStore",
    "Checkpoint",
    "CheckpointAuthError",
    "CheckpointConflictError",
    "CheckpointDataError",
    "CheckpointDelta",
    "CheckpointError",
    "CheckpointNotFoundError",
    "CheckpointPathError",
    "CheckpointTimeoutError",
    "CheckpointUnavailableError",
    "EvictionPolicyWarning",
    "Item",
    "LeaseBusyError",
    "LeaseLostError",
    "MemorySaver",
    "MemoryStore",
    "RedisSaver",
    "RedisStore",
    "SerializationError",
    "Serializer",
    "SqliteSaver",
    "SqliteStore",
    "TypeRegistry",
    "UnserializableValueError",
    "created_at_of",
    "default_registry",
    "default_serializer",
    "lease_seconds",
    "new_checkpoint_id",
    "new_run_id",
    "register_type",
    "supports_leases",
]
