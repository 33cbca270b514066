"""How a durable saver reads a thread's head when it holds an older head of the thread.

A checkpoint's index says where each state key's value is stored: written whole by one
checkpoint (``["v", id]``) or the first ``length`` items of one of the thread's append-only
lists (``["l", list_no, length]``). Stored values and list items never change, so comparing
the new head's index with the one held tells what must be read: a key whose reference is the
same is already decoded; a list that only grew needs its new items; anything else is read
whole. This holds only while the older head is still stored (then the thread was neither
deleted nor pruned under it, and its list numbers still mean what they meant): the savers
check that in the same read.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..base import Checkpoint, CheckpointDelta
from ..errors import SerializationError
from ..serde import Serializer
from .frozen import how_to_hand_out
from .head import CachedHead, HeadCache, HeadValues, Kinds, appended_how, private_delta
from .index import LIST, VALUE, Index, checkpoint_from

__all__ = [
    "HeadRead",
    "HeldHeadChangedError",
    "HeldWrite",
    "MissingValuesError",
    "UndecodableError",
    "head_checkpoint",
    "remember_write",
]


class MissingValuesError(Exception):
    """The stored data lacks values the index refers to (``keys``)."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__(keys)
        self.keys = sorted(keys)


_log = logging.getLogger("checkpoint")


class UndecodableError(Exception):
    """A stored value of ``key`` could not be decoded (the cause is the decoder's error)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class HeldHeadChangedError(Exception):
    """The head a read was planned against is no longer the one held (a write moved it on
    meanwhile): what it held may have changed, so nothing of it is reused."""


class HeadRead:
    """What to read for a head: ``values`` (keys whose stored value is read whole) and
    ``items`` (list keys -> the first position to read: 0 for the whole list)."""

    __slots__ = ("held", "index", "items", "values")

    def __init__(self, index: Index, held: CachedHead | None) -> None:
        self.index = index
        self.held = held
        self.values: list[str] = []
        self.items: dict[str, int] = {}
        held_index: Mapping[str, Any] = held.index if held is not None else {}
        for key, ref in index.items():
            old = held_index.get(key)
            if old == ref:
                continue
            if ref[0] == VALUE:
                self.values.append(key)
            elif old is not None and old[0] == LIST and old[1] == ref[1] and old[2] <= ref[2]:
                self.items[key] = old[2]
            else:
                self.items[key] = 0

    def decode(
        self,
        serializer: Serializer,
        cache: HeadCache,
        thread_id: str,
        head: tuple[str, str | None, int, bytes],
        values: Mapping[str, Any],
        items: Mapping[str, list[Any]],
    ) -> CachedHead:
        """The new head (``head``: its id, parent, step and header bytes), from the stored
        bytes read for the plan: ``values`` by key, ``items`` by list key (from the plan's
        first position on). Raises ``MissingValuesError`` when some are missing."""
        loads = serializer.loads
        index = self.index
        new: dict[str, Any] = {}
        missing: list[str] = []
        appended: dict[str, list[Any]] = {}
        key = ""
        try:
            for key in self.values:
                blob = values.get(key)
                if blob is None:
                    missing.append(key)
                else:
                    new[key] = loads(blob)
            for key, start in self.items.items():
                blobs = items.get(key, ())
                if len(blobs) != index[key][2] - start:
                    missing.append(key)
                else:
                    appended[key] = [loads(blob) for blob in blobs]
        except (SerializationError, KeyError, TypeError, ValueError) as error:
            raise UndecodableError(key) from error
        if missing:
            raise MissingValuesError(missing)
        result: dict[str, Any] = {}
        how: dict[str, int] = {}
        owned: dict[str, None] = {}
        with cache.lock:  # the held head may be advanced in place by a write meanwhile
            if self.held is not None and cache.entry(thread_id) is not self.held:
                raise HeldHeadChangedError
            held = self.held.values if self.held is not None else None
            for key in index:
                if key in new:
                    result[key] = value = new[key]
                    how[key] = how_to_hand_out(value)
                elif key in appended:
                    fresh = appended[key]
                    if self.items[key] and held is not None:
                        result[key] = value = [*held.values[key], *fresh]
                        how[key] = appended_how(held.how[key], fresh, value)
                    else:
                        result[key] = value = fresh
                        how[key] = how_to_hand_out(value)
                    owned[key] = None
                else:
                    assert held is not None
                    value = held.values[key]
                    if key in held.owned:  # the held head may extend it: take a copy
                        value = list(value)
                        owned[key] = None
                    result[key] = value
                    how[key] = held.how[key]
        checkpoint_id, parent_id, step, header = head
        return CachedHead(
            checkpoint_id, parent_id, step, header, index, HeadValues(result, how, owned)
        )


def head_checkpoint(
    serializer: Serializer,
    thread_id: str,
    head: CachedHead,
    values: Mapping[str, Any],
    stored_header: bytes | None = None,
) -> Checkpoint:
    """The checkpoint a held head describes, with ``values`` (copies handed out) and
    ``stored_header`` when the read found it (``put_writes`` rewrites a stored header)."""
    header = serializer.loads(head.header if stored_header is None else stored_header)
    return checkpoint_from(
        {**header, "parent": head.parent_id, "step": head.step}, head.id, thread_id, values
    )


class HeldWrite:
    """What one write does to the head held for its thread: the private copy of its delta
    can be made while the write is on its way (``prepare``); once the write is stored,
    ``written`` moves the held head on by it when the head held was the parent, drops it
    when it was not (a fork, or a write from elsewhere), and holds a new thread's first head
    as it is."""

    __slots__ = ("cache", "checkpoint", "delta", "private")

    def __init__(self, cache: HeadCache, checkpoint: Checkpoint, delta: CheckpointDelta) -> None:
        self.cache = cache
        self.checkpoint = checkpoint
        self.delta = delta
        self.private: tuple[CheckpointDelta, Kinds] | None = None

    def _wanted(self) -> bool:
        parent = self.checkpoint.parent_id
        return bool(self.cache.size) and (
            parent is None or self.cache.head_id(self.checkpoint.thread_id) == parent
        )

    def prepare(self) -> None:
        """Make the private delta now, when the held head may take it (never raises: what
        fails here is done again, and handled, by ``written``)."""
        if self.private is None and self._wanted():
            try:
                self.private = private_delta(self.delta, self.cache.serializer)
            except Exception:
                self.private = None

    def written(self, index: Index | bytes | str, header: bytes) -> None:
        """The checkpoint is stored with ``index`` (or its JSON) and ``header``."""
        cache, checkpoint = self.cache, self.checkpoint
        if not cache.size:
            return
        thread, parent = checkpoint.thread_id, checkpoint.parent_id
        if not self._wanted():
            cache.forget(thread)
            return

        def make(values: HeadValues) -> CachedHead:
            return CachedHead(checkpoint.id, parent, checkpoint.step, header, index, values)

        try:
            private, kinds = self.private or private_delta(self.delta, cache.serializer)
            if parent is None:
                first = HeadValues()
                first.advance(private, kinds)
                cache.keep(thread, make(first))
            elif not cache.advance(thread, parent, make, private, kinds):
                cache.forget(thread)
        except Exception:  # the write is stored: holding nothing is always right
            _log.debug("not holding thread %r after a write", thread, exc_info=True)
            cache.forget(thread)

    def forget(self) -> None:
        """The write's outcome is unknown: hold nothing for the thread."""
        self.cache.forget(self.checkpoint.thread_id)


def remember_write(
    cache: HeadCache,
    checkpoint: Checkpoint,
    delta: CheckpointDelta,
    index: Index,
    header: bytes,
) -> None:
    """After ``checkpoint`` was written with ``index``: ``HeldWrite.written``."""
    HeldWrite(cache, checkpoint, delta).written(index, header)
