"""Rebuilding full state from a chain of deltas."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..base import CheckpointDelta


def apply_deltas(deltas: Iterable[CheckpointDelta]) -> dict[str, Any]:
    """The values obtained by applying ``deltas`` (oldest first) onto an empty state.

    Runs in time linear in the total size of the deltas: an APPEND list is copied once,
    then extended in place.
    """
    values: dict[str, Any] = {}
    owned: set[str] = set()  # keys whose list was created here and may be extended in place
    for delta in deltas:
        for key, value in delta.replaced.items():
            values[key] = value
            owned.discard(key)
        for key, items in delta.appended.items():
            if key in owned:
                values[key].extend(items)
            else:
                current = values.get(key)
                values[key] = [*(current or ()), *items]
                owned.add(key)
    return values
