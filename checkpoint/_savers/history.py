"""Decoding a thread's history once: the stored values and list items of many checkpoints.

Consecutive checkpoints of a thread share almost everything (a list prefix, the values the
last steps did not change), so a durable saver's ``list`` decodes each stored value and list
item once and builds every checkpoint from the decoded objects. What cannot change (see
``frozen``) is shared between the checkpoints it builds; anything else is decoded again for
each checkpoint after the first, and every checkpoint gets lists of its own. So what a
caller does to one yielded checkpoint's values changes neither another one nor storage.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from .frozen import COPY, IMMUTABLE, LIST, SHARE, how_to_hand_out, is_frozen

__all__ = ["Decoded"]


class _List:
    """The decoded prefix of one stored list, and the positions of its changeable items."""

    __slots__ = ("items", "mutable")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.mutable: list[int] = []  # ascending


class Decoded:
    """The values and list items one history read has decoded, each decoded once.

    ``loads`` decodes one stored blob. Lists and values are named by any hashable the saver
    uses (a list number, a ``(checkpoint id, key)``); their bytes are passed on every call,
    since the saver may read them page by page.
    """

    __slots__ = ("_lists", "_loads", "_values")

    def __init__(self, loads: Callable[[bytes], Any]) -> None:
        self._loads = loads
        self._lists: dict[Hashable, _List] = {}
        # name -> (the decoded value, how to hand it out); ``None`` once a COPY was handed out
        self._values: dict[Hashable, tuple[Any, int]] = {}

    def items(self, name: Hashable, blobs: Sequence[bytes], length: int) -> list[Any]:
        """A new list of the first ``length`` items of the stored list ``name``, whose bytes
        ``blobs`` holds (at least ``length`` of them)."""
        stored = self._lists.get(name)
        if stored is None:
            stored = self._lists[name] = _List()
        decoded, mutable, loads = stored.items, stored.mutable, self._loads
        fresh = len(decoded)  # items decoded from here on are handed out once as they are
        for pos in range(fresh, length):
            item = loads(blobs[pos])
            decoded.append(item)
            if type(item) not in IMMUTABLE and not is_frozen(item):
                mutable.append(pos)
        out = decoded[:length]
        limit = min(fresh, length)
        for pos in mutable:
            if pos >= limit:
                break
            out[pos] = loads(blobs[pos])  # handed out before: this one gets its own
        return out

    def value(self, name: Hashable, blob: bytes) -> Any:
        """The stored value ``name`` (its bytes ``blob``), as a caller may have it."""
        found = self._values.get(name)
        if found is None:
            value = self._loads(blob)
            how = how_to_hand_out(value)
            # a value that must be copied is handed out this once as decoded, then decoded again
            self._values[name] = (None if how == COPY else value, how)
            return list(value) if how == LIST else value
        value, how = found
        if how == SHARE:
            return value
        if how == LIST:
            return list(value)
        return self._loads(blob)
