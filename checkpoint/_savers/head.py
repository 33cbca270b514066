"""A thread's latest values, kept decoded and private, advanced by each write's delta.

``MemorySaver`` keeps every thread's head this way. The durable savers keep the heads of the
threads they used last in a ``HeadCache``, so that a process continuing a thread it has read
or written decodes only what is new. Values here are objects only the saver holds: what cannot
change is shared with callers, everything else is handed out as a copy.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from ..base import CheckpointDelta
from ..serde import Serializer
from .frozen import COPY, IMMUTABLE, LIST, SHARE, all_frozen, hand_out, how_to_hand_out, is_frozen

__all__ = ["CachedHead", "HeadCache", "HeadValues", "Kinds", "index_from_json", "private_delta"]

# Per key of a delta: how a replaced value is handed out; whether appended items all are shared.
Kinds = dict[str, Any]


def private_delta(delta: CheckpointDelta, serializer: Serializer) -> tuple[CheckpointDelta, Kinds]:
    """The delta made of objects the caller cannot reach (values that cannot change as they
    are, the others copied), and how each key may be handed out: for a replaced key,
    ``how_to_hand_out``; for an appended one, whether every new item is shared."""
    replaced: dict[str, Any] = {}
    kinds: Kinds = {}
    for key, value in delta.replaced.items():
        kinds[key] = how = how_to_hand_out(value)
        replaced[key] = hand_out(value, how, serializer)
    appended: dict[str, list[Any]] = {}
    for key, items in delta.appended.items():
        appended[key] = own = []
        kinds[key] = True
        for item in items:
            if type(item) in IMMUTABLE or is_frozen(item):
                own.append(item)
            else:
                own.append(hand_out(item, COPY, serializer))
                kinds[key] = False
    return CheckpointDelta(appended=appended, replaced=replaced), kinds


class HeadValues:
    """Private values, how to hand each out (``SHARE``/``LIST``/``COPY``), and the keys whose
    list was made here (extended in place by the next append, so a write costs its delta)."""

    __slots__ = ("how", "owned", "values")

    def __init__(
        self,
        values: dict[str, Any] | None = None,
        how: dict[str, int] | None = None,
        owned: dict[str, None] | None = None,
    ) -> None:
        self.values: dict[str, Any] = {} if values is None else values
        self.how: dict[str, int] = (
            {k: how_to_hand_out(v) for k, v in self.values.items()} if how is None else how
        )
        # a list not made here may be shared with a stored record: copied on its first append
        # (a dict of names, not a set: the garbage collector does not track it)
        self.owned: dict[str, None] = {} if owned is None else owned

    def advance(self, delta: CheckpointDelta, kinds: Kinds) -> None:
        """Apply a private delta (``private_delta``) in place."""
        values, how, owned = self.values, self.how, self.owned
        for key, value in delta.replaced.items():
            values[key] = value
            how[key] = kinds[key]
            owned.pop(key, None)
        for key, items in delta.appended.items():
            current = values.get(key)
            was = how.get(key, LIST) if current is not None else LIST
            if key in owned:
                current.extend(items)  # type: ignore[union-attr]
            else:
                values[key] = [*(current or ()), *items]
                owned[key] = None
            if was == LIST and kinds[key]:
                how[key] = LIST
            else:
                how[key] = how_to_hand_out(values[key])

    def hand_out(self, serializer: Serializer) -> dict[str, Any]:
        """The values as a caller may have them: shared, a new list, or a deep copy."""
        how = self.how
        return {
            k: v
            if how[k] == SHARE
            else list(v)
            if how[k] == LIST
            else hand_out(v, COPY, serializer)
            for k, v in self.values.items()
        }


class CachedHead:
    """A durable saver's decoded copy of a thread's head: its id, what its stored row holds
    besides the values (parent, step, header bytes), its index (where each key's value is
    stored: what tells a later read which parts are new) and its values. The index may be
    given as the JSON a write's reply carries: it is decoded when a read first needs it."""

    __slots__ = ("_index", "header", "id", "parent_id", "step", "values")

    def __init__(
        self,
        checkpoint_id: str,
        parent_id: str | None,
        step: int,
        header: bytes,
        index: Mapping[str, Any] | bytes | str,
        values: HeadValues,
    ) -> None:
        self.id = checkpoint_id
        self.parent_id = parent_id
        self.step = step
        self.header = header
        self._index = index
        self.values = values

    @property
    def index(self) -> Mapping[str, Any]:
        index = self._index
        if isinstance(index, (bytes, str)):
            self._index = index = index_from_json(index)
        return index


def index_from_json(raw: bytes | str) -> dict[str, Any]:
    """A stored or answered index (JSON); ``[]`` is an empty one too (fakeredis's cjson
    encodes an empty table as an array)."""
    index: dict[str, Any] = json.loads(raw) or {}
    return index


class HeadCache:
    """The heads of the ``size`` threads a saver used last (least recently used goes first;
    ``size=0`` keeps none). Thread-safe: an entry is read (handed out) and advanced under
    the cache's lock."""

    def __init__(self, size: int, serializer: Serializer) -> None:
        if type(size) is not int or size < 0:
            raise ValueError(f"cache_threads must be an int >= 0, got {size!r}")
        self.size = size
        self.serializer = serializer
        self._heads: OrderedDict[str, CachedHead] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def lock(self) -> threading.Lock:
        """Held while a held head is read or advanced."""
        return self._lock

    def __len__(self) -> int:
        return len(self._heads)

    def head_id(self, thread_id: str) -> str | None:
        """The id of the head held for the thread, if any."""
        head = self._heads.get(thread_id)
        return head.id if head is not None else None

    def entry(self, thread_id: str) -> CachedHead | None:
        """The head held for the thread (the caller must not change it)."""
        return self._heads.get(thread_id)

    def values_if(self, thread_id: str, checkpoint_id: str) -> dict[str, Any] | None:
        """Copies of the held values when the head held is ``checkpoint_id``, else ``None``."""
        with self._lock:
            head = self._heads.get(thread_id)
            if head is None or head.id != checkpoint_id:
                return None
            self._heads.move_to_end(thread_id)
            return head.values.hand_out(self.serializer)

    def keep(self, thread_id: str, head: CachedHead) -> None:
        """Hold ``head`` as the thread's (replacing what was held)."""
        if not self.size:
            return
        with self._lock:
            self._heads[thread_id] = head
            self._heads.move_to_end(thread_id)
            while len(self._heads) > self.size:
                self._heads.popitem(last=False)

    def advance(
        self,
        thread_id: str,
        parent_id: str | None,
        make: Any,
        delta: CheckpointDelta,
        kinds: Kinds,
    ) -> bool:
        """After a write of a child of ``parent_id``: when the head held is that parent,
        advance it by the (private) ``delta`` and give it what ``make(values)`` returns (a
        ``CachedHead``); ``False`` (nothing held changed) otherwise."""
        with self._lock:
            head = self._heads.get(thread_id)
            if head is None or head.id != parent_id:
                return False
            head.values.advance(delta, kinds)
            self._heads[thread_id] = make(head.values)
            self._heads.move_to_end(thread_id)
            return True

    def rewrite_header(self, thread_id: str, checkpoint_id: str, header: bytes) -> None:
        """The stored header of ``checkpoint_id`` is now ``header`` (``put_writes``): the
        head held for the thread takes it when it is that checkpoint."""
        with self._lock:
            head = self._heads.get(thread_id)
            if head is not None and head.id == checkpoint_id:
                head.header = header

    def forget(self, thread_id: str) -> None:
        with self._lock:
            self._heads.pop(thread_id, None)

    def clear(self) -> None:
        with self._lock:
            self._heads.clear()


def appended_how(previous: int, items: list[Any], value: list[Any]) -> int:
    """How a held list that gained ``items`` is handed out now."""
    if previous == LIST and all_frozen(items):
        return LIST
    return how_to_hand_out(value)
