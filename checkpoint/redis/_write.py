"""What a RedisSaver sends to its write script (``_lua.WRITE``) and makes of its reply.

A write sends the checkpoint's header and its delta: replaced values whole, appended list
items as an extension of the thread's list (``"a"``), or a list whole (``"n"``). The script
may refuse an extension (the list it extends is not the parent's any more) or the whole
delta (the parent is gone): the write is then sent again with that list, or everything,
whole (``resend``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base import Checkpoint, CheckpointDelta
from ..errors import CheckpointConflictError, LeaseLostError
from ..serde import Serializer
from ._read import corrupt

__all__ = ["lease_lost", "resend", "write_args", "written_or_resend"]


def write_args(
    serializer: Serializer,
    ttl: int | None,
    max_retained: int | None,
    checkpoint: Checkpoint,
    delta: CheckpointDelta,
    check_head: bool,
    whole: Sequence[str],
    base: str,
    header: bytes,
) -> list[Any]:
    """The write script's ``ARGV``: ``delta`` with the lists of ``whole`` sent whole,
    extending the indexes of ``base`` (the parent, or ``""``: none)."""
    s = serializer
    values: list[Any] = []
    lists: list[Any] = []
    for key, value in delta.replaced.items():
        if isinstance(value, list):  # a list is stored as items, so it can grow later
            lists += [key, "n", len(value), *(s.dumps(item, key=key) for item in value)]
        else:
            values += [key, s.dumps(value, key=key)]
    for key, items in delta.appended.items():
        if key in whole:
            full = list(checkpoint.values[key])
            lists += [key, "n", len(full), *(s.dumps(item, key=key) for item in full)]
        else:
            lists += [key, "a", len(items), *(s.dumps(item, key=key) for item in items)]
    return [
        checkpoint.parent_id or "",
        "1" if check_head else "0",
        checkpoint.id,
        header,
        ttl or 0,
        max_retained or 0,
        base,
        len(values) // 2,
        *values,
        _count_ops(lists),
        *lists,
    ]


def written_or_resend(
    checkpoint: Checkpoint, reply: Sequence[Any], fence: str | None = None
) -> str | None:
    """``None`` when written; the key to send whole (``"*"``: everything); raises on a
    conflict, a lost lease (``fence``) or on stored data that cannot be extended."""
    status = int(reply[0])
    if status == 1:
        return None
    if status == 5:
        assert fence is not None, "only a fenced write is refused for its lease"
        raise lease_lost(checkpoint.thread_id, fence, reply[1])
    if status == 0:
        head = reply[1].decode() if isinstance(reply[1], bytes) else reply[1]
        if head == checkpoint.id:  # a retried script whose first run had already written
            return None
        raise CheckpointConflictError.moved(
            checkpoint.thread_id, checkpoint.parent_id, head or None
        )
    if status == 2:
        return "*"
    if status == 4:
        why = reply[1].decode() if isinstance(reply[1], bytes) else str(reply[1])
        raise corrupt(checkpoint.thread_id, checkpoint.parent_id, why, "extended")
    key = reply[1]
    return key.decode() if isinstance(key, bytes) else str(key)


def lease_lost(thread_id: str, fence: str, holder: Any) -> LeaseLostError:
    """The error for a script's ``{5, holder}`` reply."""
    live = holder.decode() if isinstance(holder, bytes) else str(holder or "")
    return LeaseLostError.refused(thread_id, fence, live or None)


def resend(
    checkpoint: Checkpoint,
    delta: CheckpointDelta,
    whole: list[str],
    base: str,
    key: str,
) -> tuple[CheckpointDelta, list[str], str]:
    """What to send after the script refused: everything whole, extending no index, if the
    parent is gone; else also ``key``'s list whole."""
    if key == "*":
        return CheckpointDelta.full(checkpoint.values), whole, ""
    return delta, [*whole, key], base


def _count_ops(lists: list[Any]) -> int:
    count, i = 0, 0
    while i < len(lists):
        count += 1
        i += 3 + int(lists[i + 2])
    return count
