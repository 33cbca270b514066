"""A thread's checkpoints as a light list, for a history view (ours, not the Agent
Protocol's: ``POST /threads/{id}/history`` answers whole states, which a page listing a
thread's thousand steps does not need). Pure conversions, no I/O."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..graph import StateSnapshot

__all__ = ["changed_keys", "checkpoint_entries"]

WireDict = dict[str, Any]


def changed_keys(values: Mapping[str, Any], parent: Mapping[str, Any]) -> list[str]:
    """The keys whose value differs from the parent's (added or removed ones too). A list is
    compared by its length and last item: a thread's lists only grow or are replaced, and a
    long conversation is not compared message by message at each step."""
    changed = []
    for key in sorted({*values, *parent}):
        if key not in values or key not in parent:
            changed.append(key)
            continue
        new, old = values[key], parent[key]
        if new is old:
            continue
        if isinstance(new, Sequence) and isinstance(old, Sequence) and not isinstance(new, str):
            differs = len(new) != len(old) or (bool(new) and new[-1] != old[-1])
        else:
            differs = new != old
        if differs:
            changed.append(key)
    return changed


def checkpoint_entries(snapshots: Iterable[StateSnapshot], limit: int) -> list[WireDict]:
    """The first ``limit`` of ``snapshots`` (newest first, as a saver lists them), each as
    ``checkpoint_id``, ``parent_checkpoint_id``, ``step``, ``source``, ``nodes`` (those whose
    writes made it), ``next``, ``created_at``, ``interrupts`` (how many wait) and
    ``changed`` (the state keys it changed from its parent; ``None`` when the parent is not
    among the snapshots read: one more than ``limit`` is read for the last one's)."""
    window: list[StateSnapshot] = []
    for snapshot in snapshots:
        window.append(snapshot)
        if len(window) > limit:
            break
    by_id = {s.checkpoint_id: s for s in window}
    entries = []
    for snapshot in window[:limit]:
        parent = by_id.get(snapshot.parent_id) if snapshot.parent_id else None
        if snapshot.parent_id is None:
            changed: list[str] | None = sorted(snapshot.values)
        elif parent is None:
            changed = None
        else:
            changed = changed_keys(snapshot.values, parent.values)
        entries.append(
            {
                "checkpoint_id": snapshot.checkpoint_id,
                "parent_checkpoint_id": snapshot.parent_id,
                "step": snapshot.step,
                "source": snapshot.metadata.get("source"),
                "nodes": list(snapshot.metadata.get("nodes") or ()),
                "next": list(snapshot.next),
                "created_at": snapshot.created_at.isoformat(),
                "interrupts": len(snapshot.interrupts),
                "changed": changed,
            }
        )
    return entries
