"""Per-run configuration."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ..errors import GraphUsageError

__all__ = ["RunnableConfig"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclasses.dataclass(frozen=True, slots=True)
class RunnableConfig:
    """What a run is about: which thread, which checkpoint, the user's context.

    ``thread_id`` selects the conversation a saver keeps; ``checkpoint_id`` replays or forks
    from that checkpoint instead of the thread's latest one; ``metadata`` is the caller's
    read-only context (for example ``{"user_id": "u1"}``), handed to nodes and tools;
    ``recursion_limit`` caps the super-steps of one run (``None``: the graph's default).

    ``lease`` is the token of the thread lease this run holds, set by a runs worker that
    acquired it (``BaseCheckpointSaver.acquire_lease``); every checkpoint write of the run is
    fenced by it (``put(..., fence=lease)``) and refused with ``LeaseLostError``, nothing
    written, once the thread's lease is another's or has expired: the run then stops, as
    another worker owns the thread. ``None`` (the default): writes are not fenced. It needs
    a saver that keeps leases (``checkpoint.supports_leases``).
    """

    thread_id: str = "default"
    checkpoint_id: str | None = None
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=lambda: _EMPTY)
    recursion_limit: int | None = None
    lease: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.thread_id, str) or not self.thread_id:
            raise GraphUsageError(
                f"RunnableConfig.thread_id must be a non-empty str, got {self.thread_id!r}"
            )
        if self.checkpoint_id is not None and not isinstance(self.checkpoint_id, str):
            raise GraphUsageError(
                f"RunnableConfig.checkpoint_id must be a str or None, got {self.checkpoint_id!r}"
            )
        if self.recursion_limit is not None and (
            not isinstance(self.recursion_limit, int) or self.recursion_limit < 1
        ):
            raise GraphUsageError(
                "RunnableConfig.recursion_limit must be a positive int or None, "
                f"got {self.recursion_limit!r}"
            )
        if self.lease is not None and (not isinstance(self.lease, str) or not self.lease):
            raise GraphUsageError(
                "RunnableConfig.lease must be a non-empty str (the token of the thread lease "
                f"the run holds) or None, got {self.lease!r}"
            )
        if not isinstance(self.metadata, MappingProxyType):
            if not isinstance(self.metadata, Mapping):
                raise GraphUsageError(
                    f"RunnableConfig.metadata must be a mapping, got {type(self.metadata).__name__}"
                )
            object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    def replace(self, **changes: Any) -> RunnableConfig:
        """A copy with the given fields changed, e.g. ``config.replace(checkpoint_id=None)``."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def coerce(cls, config: RunnableConfig | Mapping[str, Any] | None) -> RunnableConfig:
        """Accept a ``RunnableConfig``, a dict of its fields, or ``None`` (the defaults)."""
        if config is None:
            return _DEFAULT
        if isinstance(config, RunnableConfig):
            return config
        if isinstance(config, Mapping):
            unknown = set(config) - {f.name for f in dataclasses.fields(cls)}
            if unknown:
                raise GraphUsageError(
                    f"unknown RunnableConfig field(s) {sorted(unknown)}; "
                    "known: thread_id, checkpoint_id, metadata, recursion_limit, lease"
                )
            return cls(**config)
        raise GraphUsageError(
            f"config must be a RunnableConfig or a dict, got {type(config).__name__}"
        )


_DEFAULT = RunnableConfig()
