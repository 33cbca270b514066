"""The per-checkpoint index durable savers keep: where each state key's value lives.

What a thread holds, what ``put`` adds and what retention drops are ``retention``'s rules,
for every saver. This is how the durable savers store it, the same way: ``SqliteSaver`` in
SQL, ``RedisSaver`` in Lua (``redis/_lua.py``). (``MemorySaver`` keeps deltas instead.)

A checkpoint's index maps every state key to either ``["v", checkpoint_id]`` (the value was
written whole by that checkpoint) or ``["l", list_no, length]`` (the first ``length`` items of
the thread's append-only list ``list_no``). A new checkpoint's index is its parent's with the
keys its delta touched changed, so it stays as small as the number of keys, and reading any
checkpoint needs its index, its values and its list prefixes, however long the thread.

What ``put`` does. The new index starts as the parent's (``{}`` with no parent; ``{}`` too
when the thread does not hold the parent, and then every key of ``checkpoint.values`` is
written as replaced). Then, for each key of the delta:

- replaced: the value is stored under (the new checkpoint's id, the key) and the key refers to
  it (``value_ref``); ``RedisSaver`` stores a list value as a new list instead, so it can grow;
- appended onto a list at its tip (the list's stored length is the one the index names): the
  items go on the end of that list, and older indexes still name their own prefixes of it;
- appended onto a list past which something was appended already (a fork from an older
  checkpoint): the index's prefix is copied to a new list, and the items go on its end;
- appended onto a value, or onto nothing: a new list holding the value's items (none, for
  nothing), then the new ones (``RedisSaver``'s script asks the client to resend the whole
  list instead).

A stored value or list item never changes (a list only grows, past every length an index
names), so any number of indexes share them. A list number is not reused while the thread
exists.

What retention does. Each dropped checkpoint's header and index are deleted; then every
stored value and every list that no kept checkpoint's index refers to, whoever wrote it. A
kept checkpoint's index names only what is still stored, so its values stay whole when its
parent is dropped: nothing is rebuilt.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..base import Checkpoint, CheckpointDelta
from ..serde import Serializer
from .ids import created_at_of

Index = dict[str, list[Any]]

VALUE = "v"
LIST = "l"


def value_ref(checkpoint_id: str) -> list[Any]:
    return [VALUE, checkpoint_id]


def list_ref(list_no: int, length: int) -> list[Any]:
    return [LIST, list_no, length]


def header_of(checkpoint: Checkpoint) -> dict[str, Any]:
    """What a durable saver stores about a checkpoint besides its values."""
    return {
        "parent": checkpoint.parent_id,
        "step": checkpoint.step,
        "next": list(checkpoint.next_nodes),
        **engine_record_of(checkpoint),
    }


def engine_record_of(checkpoint: Checkpoint) -> dict[str, Any]:
    """The header's fields that may hold any value: metadata and the engine's record of a
    paused step (``metadata``, ``interrupts``, ``resume``, ``pending``)."""
    metadata, interrupts, resume, pending = engine_record_list(checkpoint)
    return {"metadata": metadata, "interrupts": interrupts, "resume": resume, "pending": pending}


def engine_record_list(checkpoint: Checkpoint) -> list[Any]:
    """``engine_record_of``'s values, in its order, as a list (``MemorySaver``'s header).
    Empty fields (a step that did not pause) are made without looking into them."""
    interrupts, resume, pending = (
        checkpoint.interrupts,
        checkpoint.resume_values,
        checkpoint.pending_writes,
    )
    return [
        dict(checkpoint.metadata),
        [dict(i) for i in interrupts] if interrupts else [],
        {k: list(v) for k, v in resume.items()} if resume else {},
        dict(pending) if pending else {},
    ]


def checkpoint_from(
    header: Mapping[str, Any], checkpoint_id: str, thread_id: str, values: Mapping[str, Any]
) -> Checkpoint:
    """The checkpoint a stored header and its values describe."""
    return Checkpoint(
        id=checkpoint_id,
        thread_id=thread_id,
        parent_id=header["parent"],
        step=header["step"],
        next_nodes=tuple(header["next"]),
        values=values,
        created_at=created_at_of(checkpoint_id),
        metadata=header["metadata"],
        interrupts=tuple(header["interrupts"]),
        resume_values={k: tuple(v) for k, v in header["resume"].items()},
        pending_writes=header["pending"],
    )


@dataclasses.dataclass(frozen=True)
class EncodedPut:
    """What one ``put`` stores, as bytes: each replaced value, each appended item, the header."""

    replaced: dict[str, bytes]
    appended: dict[str, list[bytes]]
    header: bytes

    @property
    def size(self) -> int:
        """The bytes a durable saver stores for it (before its index)."""
        return (
            sum(map(len, self.replaced.values()))
            + sum(len(blob) for blobs in self.appended.values() for blob in blobs)
            + len(self.header)
        )


def encode_put(
    serializer: Serializer, checkpoint: Checkpoint, delta: CheckpointDelta
) -> EncodedPut:
    """Serialize what a ``put`` stores, before anything is written.

    Every saver encodes this way, so a value that cannot be stored fails with the same
    ``UnserializableValueError`` (message, ``key``, ``path``) in each: replaced values first,
    then appended items (the path starts at the item), then the header.
    """
    s = serializer
    replaced = {k: s.dumps(v, key=k) for k, v in delta.replaced.items()}
    appended = {k: [s.dumps(item, key=k) for item in items] for k, items in delta.appended.items()}
    header = s.dumps(header_of(checkpoint), key="<checkpoint header>")
    return EncodedPut(replaced, appended, header)
