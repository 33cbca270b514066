"""The state a graph runs over, and how updates to each key are merged."""

from __future__ import annotations

import enum
from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, TypeAlias

__all__ = ["KeyStrategy", "KeyStrategyLike", "OverAllState", "Overwrite", "Updates"]


def _frozen(value: Any) -> Any:
    """A list or dict handed out as a (shallow) copy: what a reader does to it cannot reach
    the engine's, and the saver's, value. Other values as they are."""
    kind = type(value)
    if kind is list:
        return list(value)
    if kind is dict:
        return dict(value)
    return value


class OverAllState(Mapping[str, Any]):
    """A read-only view of a graph's state: ``state["k"]``, ``state.get("k", d)``, ``state.value("k")``.

    Nodes never change it; they return a dict of updates. Lists and dicts are handed out as
    shallow copies, so what a node, hook, tool or caller does to ``state["messages"]`` never
    changes the stored history (to replace a list, return ``Overwrite([...])`` for its key).
    The items themselves (messages are frozen) are shared.
    """

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        self._data: Mapping[str, Any] = {} if data is None else data

    def __getitem__(self, key: str) -> Any:
        return _frozen(self._data[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: str, default: Any = None) -> Any:
        # ``_frozen`` inline: the engine, routers, nodes and tools read the state this way
        value = self._data.get(key, default)
        kind = type(value)
        if kind is list:
            return list(value)
        if kind is dict:
            return dict(value)
        return value

    def value(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when the state has no such key."""
        return _frozen(self._data.get(key, default))

    def keys(self) -> KeysView[str]:
        return self._data.keys()

    def items(self) -> ItemsView[str, Any]:
        return {k: _frozen(v) for k, v in self._data.items()}.items()

    def values(self) -> ValuesView[Any]:
        return {k: _frozen(v) for k, v in self._data.items()}.values()

    @property
    def stored(self) -> Mapping[str, Any]:
        """The values as the state holds them, not copied: for a reader that copies what it
        keeps (an event's payload copy). What changes them changes the run and its
        checkpoints; ``data()`` and the other readers hand out copies."""
        return self._data

    def data(self) -> dict[str, Any]:
        """A copy of the state as a plain dict (lists and dicts copied too)."""
        return {k: _frozen(v) for k, v in self._data.items()}

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OverAllState):
            return dict(self._data) == dict(other._data)
        if isinstance(other, Mapping):
            return dict(self._data) == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"OverAllState({dict(self._data)!r})"


class KeyStrategy(enum.Enum):
    """How an update to a state key is merged with its current value.

    ``REPLACE``: the new value wins (two writes in one super-step are an error).
    ``APPEND``: list concatenation; a single non-list item is appended.
    ``MERGE``: dict update. Any callable ``(old, new) -> merged`` may be used instead.
    The engine applies them all in one place (``graph._merge``).
    """

    REPLACE = "replace"
    APPEND = "append"
    MERGE = "merge"


KeyStrategyLike: TypeAlias = KeyStrategy | Callable[[Any, Any], Any]


class Overwrite:
    """Wrap an update value to store it as is, bypassing the key's strategy.

    ``{"messages": Overwrite(kept)}`` replaces an APPEND list instead of extending it.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Overwrite({self.value!r})"


class Updates:
    """Several updates from one node, merged in order by the key strategies as if the node
    had returned them one after another: a later write to a REPLACE key wins (two different
    nodes writing it in one step is still an error). ``Updates(first, second, ...)``; an
    agent folds what its parallel tool calls wrote to ``extra_state`` this way.
    """

    __slots__ = ("parts",)

    def __init__(self, *parts: Mapping[str, Any] | None) -> None:
        self.parts = parts

    def __repr__(self) -> str:
        return f"Updates{self.parts!r}"
