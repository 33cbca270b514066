"""Copies of what an event carries, so that its readers cannot change the run.

A run event's payload (a node's update, the run's input and values, a custom event's data)
is built from the run's own objects: the dict a node returned is the dict merged into the
state and stored in the checkpoint. ``detached(value)`` gives a copy of every dict, list and
set in ``value`` (inside tuples, and inside the graph's ``Command``, ``Send``, ``Interrupt``
and ``OverAllState`` too), and the other objects as they are: strings, numbers and frozen
messages cannot change; objects of other classes are shared (they are the caller's own). A
listener that masks a secret in its event, or appends to a list in it, changes its event
only.

This module imports nothing else of the package, so the event classes may use it.
"""

from __future__ import annotations

import copy
import datetime
import decimal
import enum
import operator
import uuid
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["detached"]

# How each type seen so far is copied; ``None``: the value is shared as it is.
_Handler = Callable[[Any, int], Any]
_handlers: dict[type, _Handler | None] = dict.fromkeys(
    (
        type(None), bool, int, float, complex, str, bytes, frozenset, range, type(Ellipsis),
        decimal.Decimal, uuid.UUID, datetime.datetime, datetime.date, datetime.time,
        datetime.timedelta,
    )
)  # fmt: skip
_UNSEEN: Any = object()

# Deeper than this, a value is copied by ``copy.deepcopy`` (which handles a value that
# contains itself) instead of by the recursion here.
_DEPTH = 64


def detached(value: Any, depth: int = 0) -> Any:
    """``value`` with every dict, list and set in it copied (see the module's doc)."""
    cls = type(value)
    handler = _handlers.get(cls, _UNSEEN)
    if handler is None:
        return value
    if handler is _UNSEEN:
        handler = _handlers[cls] = _handler_for(cls)
        if handler is None:
            return value
    if depth >= _DEPTH:
        return _deep(value)
    return handler(value, depth + 1)


def _deep(value: Any) -> Any:
    try:
        return copy.deepcopy(value)
    except Exception:  # an object deepcopy cannot copy: shared rather than break the run
        return value


def _item(value: Any, depth: int) -> Any:
    # the shared types are answered without a call to ``detached``: most items are those
    return value if _handlers.get(type(value), _UNSEEN) is None else detached(value, depth)


def _all_shared(items: Iterable[Any]) -> bool:
    """Whether every item is of a type shared as it is: one look per distinct type, so a
    long conversation (messages of two or three classes) costs about one pass in C."""
    for cls in set(map(type, items)):
        handler = _handlers.get(cls, _UNSEEN)
        if handler is _UNSEEN:
            handler = _handlers[cls] = _handler_for(cls)
        if handler is not None:
            return False
    return True


def _dict(value: dict[Any, Any], depth: int) -> dict[Any, Any]:
    if _all_shared(value.values()):
        return value.copy()
    return {key: _item(item, depth) for key, item in value.items()}


def _list(value: list[Any], depth: int) -> list[Any]:
    if _all_shared(value):
        return value.copy()
    return [_item(item, depth) for item in value]


def _tuple(value: tuple[Any, ...], depth: int) -> tuple[Any, ...]:
    if _all_shared(value):
        return value  # nothing in it can change: the tuple itself is shared
    items = [_item(item, depth) for item in value]
    if all(map(operator.is_, items, value)):
        return value  # nothing in it can change: the tuple itself is shared
    return tuple(items)


def _set(value: set[Any], depth: int) -> set[Any]:
    return set(value)  # its items are hashable: numbers, strings, tuples


def _bytearray(value: bytearray, depth: int) -> bytearray:
    return bytearray(value)


def _dict_subclass(value: dict[Any, Any], depth: int) -> Any:
    """An ``OrderedDict``, a ``defaultdict``, a ``Counter``: the same class, values copied."""
    try:
        new = copy.copy(value)
        for key, item in list(new.items()):
            new[key] = _item(item, depth)
        return new
    except Exception:
        return _deep(value)


def _list_subclass(value: list[Any], depth: int) -> Any:
    try:
        new = copy.copy(value)
        new[:] = [_item(item, depth) for item in value]
        return new
    except Exception:
        return _deep(value)


def _named_tuple(value: Any, depth: int) -> Any:
    items = [_item(item, depth) for item in value]
    if all(map(operator.is_, items, value)):
        return value
    return type(value)._make(items)


def _set_subclass(value: set[Any], depth: int) -> Any:
    try:
        return copy.copy(value)
    except Exception:
        return _deep(value)


def _command(value: Any, depth: int) -> Any:
    kwargs: dict[str, Any] = {
        "update": detached(value.update, depth),
        "goto": detached(value.goto, depth),
        "graph": value.graph,
    }
    if value.has_resume:
        kwargs["resume"] = detached(value.resume, depth)
    return type(value)(**kwargs)


def _send(value: Any, depth: int) -> Any:
    return type(value)(value.node, detached(value.arg, depth))


def _interrupt(value: Any, depth: int) -> Any:
    inner = detached(value.value, depth)
    if inner is value.value:
        return value
    return type(value)(value.id, value.node, value.when, inner, value.namespace)


def _state(value: Any, depth: int) -> Any:
    return type(value)(_dict(value.stored, depth))  # the same read-only view, over a copy


# The graph's own mutable value types, by where they are defined: naming them here keeps this
# module free of imports from the package (which imports it).
_GRAPH_TYPES: dict[tuple[str, str], _Handler] = {
    ("graph_agent.graph.types", "Command"): _command,
    ("graph_agent.graph.types", "Send"): _send,
    ("graph_agent.graph.types", "Interrupt"): _interrupt,
    ("graph_agent.graph.state", "OverAllState"): _state,
}


def _handler_for(cls: type) -> _Handler | None:
    """How instances of ``cls`` are copied (worked out once per class)."""
    exact: dict[type, _Handler] = {
        dict: _dict,
        list: _list,
        tuple: _tuple,
        set: _set,
        bytearray: _bytearray,
    }
    if cls in exact:
        return exact[cls]
    graph_type = _GRAPH_TYPES.get((cls.__module__, cls.__qualname__))
    if graph_type is not None:
        return graph_type
    if issubclass(cls, enum.Enum):
        return None
    if issubclass(cls, dict):
        return _dict_subclass
    if issubclass(cls, list):
        return _list_subclass
    if issubclass(cls, tuple):
        return _named_tuple if hasattr(cls, "_make") else None
    if issubclass(cls, set):
        return _set_subclass
    return None  # a message, a frozen model, an exception, an object of the caller's own
