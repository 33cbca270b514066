"""Find where inside a value the first item that cannot be checkpointed sits, and say so.

Only used on the error path of ``checkpoint.serde``: the fast path packs with msgpack and, when
that fails, this walk mirrors the packer's rules to name the offending item, e.g.
``messages[3].metadata['conn']``, and builds the ``UnserializableValueError``.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Literal
from uuid import UUID

from pydantic import BaseModel

from checkpoint.errors import UnserializableValueError

#: Exact types packed as they are (native msgpack) or through a fixed ext code.
LEAF_TYPES: frozenset[type] = frozenset(
    {
        type(None),
        bool,
        int,
        float,
        str,
        bytes,
        bytearray,
        memoryview,
        _dt.datetime,
        _dt.date,
        _dt.time,
        _dt.timedelta,
        UUID,
        Decimal,
    }
)
#: Deeper than this (containers on the walk; ext levels when packing/unpacking) is an error.
MAX_DEPTH = 100

Reason = Literal["type", "cycle", "depth"]

#: Given an object, the (path suffix such as ".field", child) pairs of a registered instance,
#: or None when the object's type is not registered.
ChildrenOf = Callable[[object], "Iterable[tuple[str, object]] | None"]


@dataclasses.dataclass(frozen=True)
class Problem:
    """The first item (in packing order) that cannot be serialized, and why."""

    path: str
    obj: object
    reason: Reason


def find_problem(value: object, root: str, children_of: ChildrenOf) -> Problem | None:
    """Walk ``value`` like the packer does; return the first problem, or None if it looks fine.

    ``root`` starts every path (the state key, or ``""``). Cycles and nesting deeper than
    ``MAX_DEPTH`` are reported as problems rather than recursing forever.
    """
    return _walk(value, root, children_of, set(), 0)


def _walk(
    value: object, path: str, children_of: ChildrenOf, ancestors: set[int], depth: int
) -> Problem | None:
    cls = type(value)
    if cls in LEAF_TYPES:
        return None
    # isinstance() narrows for mypy; the exact type check is what the packer applies.
    items: Iterable[tuple[str, object]] | None
    if isinstance(value, (list, tuple)) and cls in (list, tuple):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    elif isinstance(value, (set, frozenset)) and cls in (set, frozenset):
        items = ((path + "{...}", v) for v in value)
    elif isinstance(value, dict) and cls is dict:
        items = _dict_items(value, path)
    else:
        children = children_of(value)
        if children is None:
            return Problem(path, value, "type")
        items = ((path + suffix, child) for suffix, child in children)
    if id(value) in ancestors:
        return Problem(path, value, "cycle")
    if depth >= MAX_DEPTH:
        return Problem(path, value, "depth")
    ancestors.add(id(value))
    try:
        for child_path, child in items:
            found = _walk(child, child_path, children_of, ancestors, depth + 1)
            if found is not None:
                return found
    finally:
        ancestors.discard(id(value))
    return None


def _dict_items(value: dict[object, object], path: str) -> Iterable[tuple[str, object]]:
    for k, v in value.items():
        yield f"{path}<key {_short_repr(k)}>", k
        yield f"{path}[{_short_repr(k)}]", v


def _short_repr(obj: object, limit: int = 60) -> str:
    try:
        text = repr(obj)
    except Exception:  # a broken __repr__ must not hide the real error
        text = f"<{type(obj).__qualname__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def qualified_name(cls: type) -> str:
    """``module.QualName``, or just the name for builtins."""
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


FIX_HINT = (
    "Register it with checkpoint.register_type if it is a pydantic model, dataclass or enum, "
    "or keep it out of the state."
)
_BASES = (int, float, str, bytes, list, tuple, dict, set, frozenset, _dt.date, UUID, Decimal)


def unserializable_error(
    value: object, key: str | None, exc: Exception, children_of: ChildrenOf
) -> UnserializableValueError:
    """The error for ``value`` (held by state ``key``) that the packer refused with ``exc``.

    Its message names the key, the path of the first offending item, its type and the fix.
    """
    where = f"state key {key!r}" if key is not None else "value"
    try:
        problem = find_problem(value, key or "", children_of)
    except Exception:  # e.g. a field that cannot be read: fall back to msgpack's message
        problem = None
    if problem is None:  # the walk saw nothing wrong: report what msgpack said
        name = qualified_name(type(value))
        msg = f"cannot serialize {where}: {type(exc).__name__}: {exc}. {FIX_HINT}"
        return UnserializableValueError(msg, key=key, path=key or "", type_name=name)
    cls = type(problem.obj)
    name = qualified_name(cls)
    at = problem.path or "the value"
    if problem.reason == "cycle":
        detail = (
            f"{at} ({name}) is one of its own containers (a circular reference); "
            "checkpoint state must be a tree. Break the cycle or keep it out of the state."
        )
    elif problem.reason == "depth":
        detail = f"{at} ({name}) is nested more than {MAX_DEPTH} levels deep."
    else:
        detail = f"{at} has type {name}, which is not an allowed checkpoint type"
        base = next((b for b in cls.__mro__[1:] if b in _BASES), None)
        if issubclass(cls, (BaseModel, enum.Enum)) or dataclasses.is_dataclass(cls):
            detail += " (it is not registered in this serializer's registry)"
        elif base is not None:
            detail += f" (it subclasses {base.__name__}, but only exact {base.__name__} is)"
        detail += ". " + FIX_HINT
    msg = f"cannot serialize {where}: {detail}"
    return UnserializableValueError(msg, key=key, path=problem.path, type_name=name)
