"""The per-checkpoint index durable savers keep: where each state key's value lives.

A checkpoint's index maps every state key to either ``["v", checkpoint_id]`` (the value was
written whole by that checkpoint) or ``["l", list_no, length]`` (the first ``length`` items of
the thread's append-only list ``list_no``). A new checkpoint's index is its parent's with the
keys its delta touched changed, so it stays as small as the number of keys, and reading any
checkpoint needs its index, its values and its list prefixes, however long the thread.
"""

from __future__ import annotations

from typing import Any

Index = dict[str, list[Any]]

VALUE = "v"
LIST = "l"


def value_ref(checkpoint_id: str) -> list[Any]:
    return [VALUE, checkpoint_id]


def list_ref(list_no: int, length: int) -> list[Any]:
    return [LIST, list_no, length]
