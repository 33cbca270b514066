"""A RedisSaver's ``list``: the history read page by page, each stored item sent and decoded once.

Each page is one call of ``_lua.HISTORY``, atomic like every script: up to ``PAGE``
checkpoints (fewer with ``limit``), their headers and indexes, the values they hold and the
list items the client does not hold yet. The next page starts after the last id the previous
one looked at; if a writer pruned that id meanwhile, everything older went with it (pruning
drops the oldest writes first), so the history ends there, as a listing that read the ids
first and then each checkpoint would have found. List items at a position below a list's
length never change while the list exists, so items sent for one page serve the next.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .._savers.head import index_from_json
from .._savers.history import Decoded
from .._savers.index import checkpoint_from
from ..base import Checkpoint
from ..errors import SerializationError
from ..serde import Serializer
from ._read import corrupt

__all__ = ["PAGE", "HistoryPages"]

PAGE = 100
"""Checkpoints per page: what one script call reads (and blocks the server for) at most."""


def _text(data: Any) -> str:
    return data.decode() if isinstance(data, bytes) else str(data)


class HistoryPages:
    """One ``list`` call: what to ask for next (``args``), and the checkpoints of each reply
    (``take``). ``done`` once the history or ``limit`` is exhausted."""

    def __init__(
        self,
        serializer: Serializer,
        thread_id: str,
        limit: int | None,
        before: str | None,
        ttl: int,
    ) -> None:
        self._serializer = serializer
        self._thread = thread_id
        self._left = limit  # checkpoints still wanted (None: all)
        self._before = before or ""
        self._ttl = ttl
        self._items: dict[int, list[bytes]] = {}  # list number -> its items received so far
        self._values: dict[str, bytes] = {}  # "<id>\n<key>" -> the stored value
        self._decoded = Decoded(serializer.loads)
        self._count = 0  # ids the page asked for may look at
        self.done = limit is not None and limit <= 0

    def args(self) -> list[Any]:
        """The next page's script arguments."""
        self._count = PAGE if self._left is None else min(PAGE, self._left)
        have: list[Any] = []
        for list_no, items in self._items.items():
            have += [list_no, len(items)]
        return [self._before, self._count, self._ttl, *have]

    def take(self, reply: Any) -> Iterator[Checkpoint]:
        """The checkpoints of one page's reply, each built as it is iterated (the page's
        bytes are taken at once, so ``args`` is ready for the next page right away)."""
        if reply and _text(reply[0]) == "!":
            raise corrupt(self._thread, None, _text(reply[1]), "listed")
        scanned, last, entries, values, lists = reply
        for i in range(0, len(values), 2):
            self._values[_text(values[i])] = values[i + 1]
        for i in range(0, len(lists), 3):
            list_no, start, items = int(lists[i]), int(lists[i + 1]), lists[i + 2]
            held = self._items.setdefault(list_no, [])
            if start != len(held):  # the script sends from what args said the client holds
                raise corrupt(self._thread, None, f"list {list_no} was sent from {start}", "listed")
            held += items
        page = [
            (_text(entries[i]), entries[i + 1], entries[i + 2]) for i in range(0, len(entries), 3)
        ]
        self._before = _text(last)
        self.done = int(scanned) < self._count
        if self._left is not None:
            self._left -= int(scanned)
            self.done = self.done or self._left <= 0
        return (self._checkpoint(*entry) for entry in page)

    def _checkpoint(self, cid: str, header_blob: bytes, raw_index: bytes) -> Checkpoint:
        key = "<checkpoint index>"
        decoded = self._decoded
        try:
            index = index_from_json(raw_index)  # fakeredis's cjson answers ``[]`` for ``{}``
            values: dict[str, Any] = {}
            for key, ref in index.items():
                if ref[0] == "v":
                    field = f"{ref[1]}\n{key}"
                    values[key] = decoded.value(field, self._values[field])
                else:
                    list_no, length = int(ref[1]), int(ref[2])
                    items = self._items.get(list_no, [])
                    if len(items) < length:
                        raise KeyError(f"list {list_no} has {len(items)} of {length} items")
                    values[key] = decoded.items(list_no, items, length)
            key = "<checkpoint header>"
            header = self._serializer.loads(header_blob)
            return checkpoint_from(header, cid, self._thread, values)
        except (SerializationError, KeyError, TypeError, ValueError) as error:
            raise corrupt(
                self._thread,
                cid,
                f"'{key}' of checkpoint {cid} cannot be decoded ({error})",
                "read",
            ) from error
