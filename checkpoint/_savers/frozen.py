"""Which stored values can be handed out as they are, and copies of the others.

``MemorySaver`` keeps objects, not bytes. An object that cannot change (a str, a tuple of
ints, a frozen message) can be shared between the saver and every caller; anything else (a
list, a dict, a mutable model) is handed out as a copy, so nothing a caller does to what it
got back changes what is stored.

A frozen pydantic model or frozen dataclass counts as unchangeable when its fields hold
unchangeable values, or dicts, lists and sets of them: a dict directly inside a frozen object
(a message's ``metadata``) is treated as read-only rather than copied on every read.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import types
from collections.abc import Iterable
from decimal import Decimal
from typing import Annotated, Any, Literal, Union, get_args, get_origin
from uuid import UUID

from pydantic import BaseModel

from ..serde import Serializer

#: Exact types whose instances never change.
IMMUTABLE: frozenset[type] = frozenset(
    {
        type(None),
        bool,
        int,
        float,
        str,
        bytes,
        Decimal,
        UUID,
        _dt.datetime,
        _dt.date,
        _dt.time,
        _dt.timedelta,
    }
)

#: How a value is handed out: as it is, as a shallow copy of a list, or as a deep copy.
SHARE, LIST, COPY = 0, 1, 2

# A frozen class -> the fields whose values must be looked at (``None``: not a frozen class).
_plans: dict[type, tuple[str, ...] | None] = {}


def _plan(cls: type) -> tuple[str, ...] | None:
    """For a frozen pydantic model, the fields whose declared type does not already say
    their value cannot change (pydantic validated them against it); for a frozen dataclass,
    every field (nothing validates them); ``None`` for any other class."""
    try:
        return _plans[cls]
    except KeyError:
        pass
    plan: tuple[str, ...] | None = None
    if issubclass(cls, BaseModel) and cls.model_config.get("frozen"):
        _plans[cls] = tuple(cls.model_fields)  # while working it out: a model may refer to itself
        plan = tuple(
            name for name, info in cls.model_fields.items() if not _immutable_type(info.annotation)
        )
    elif dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        plan = tuple(f.name for f in dataclasses.fields(cls))
    _plans[cls] = plan
    return plan


def _immutable_type(tp: Any) -> bool:
    """True if every value pydantic lets through as a ``tp`` is unchangeable."""
    try:
        if tp in IMMUTABLE or tp is None:
            return True
    except TypeError:  # an unhashable annotation: nothing to trust
        return False
    origin, args = get_origin(tp), get_args(tp)
    if origin is Literal:
        return True
    if origin is Annotated:
        return _immutable_type(args[0])
    if origin is Union or origin is types.UnionType:
        return all(_immutable_type(arg) for arg in args)
    if origin is tuple or origin is frozenset:
        return bool(args) and all(arg is Ellipsis or _immutable_type(arg) for arg in args)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return True
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return _plan(tp) == () and tp.model_config.get("extra") != "allow"
    return False


# How ``is_frozen`` decides for a class's instances, worked out once per class: ``_ALWAYS``
# (an enum), ``_ITEMS`` (an exact tuple or frozenset: its items), ``_MODEL`` / ``_DATACLASS``
# (a frozen one: the fields of its plan), ``_NEVER`` (anything else).
_ALWAYS, _ITEMS, _MODEL, _DATACLASS, _NEVER = range(5)
_deciders: dict[type, tuple[int, tuple[str, ...]]] = {}


def _decider(cls: type) -> tuple[int, tuple[str, ...]]:
    decider = _deciders.get(cls)
    if decider is not None:
        return decider
    if cls is tuple or cls is frozenset:
        decider = (_ITEMS, ())
    elif issubclass(cls, enum.Enum):
        decider = (_ALWAYS, ())
    else:
        plan = _plan(cls)
        if plan is None:
            decider = (_NEVER, ())
        elif issubclass(cls, BaseModel):
            decider = (_MODEL, plan)
        else:
            decider = (_DATACLASS, plan)
    _deciders[cls] = decider
    return decider


def is_frozen(value: object) -> bool:
    """True if ``value`` cannot be changed in place, so it may be shared."""
    cls = type(value)
    if cls in IMMUTABLE:
        return True
    kind, plan = _deciders.get(cls) or _decider(cls)
    if kind == _MODEL:
        fields = value.__dict__
        extra = value.__pydantic_extra__  # type: ignore[attr-defined]
        if extra and not all(_read_only(item) for item in extra.values()):
            return False
        for name in plan:
            field = fields.get(name)
            kind_of = type(field)
            if kind_of in IMMUTABLE or (kind_of is dict and not field):  # no call: the usual case
                continue
            if not _read_only(field):
                return False
        return True
    if kind == _ITEMS:
        return all_frozen(value)  # type: ignore[arg-type]
    if kind == _ALWAYS:
        return True
    if kind == _NEVER:
        return False
    return all(_read_only(getattr(value, name)) for name in plan)


def _read_only(value: object) -> bool:
    """A field of a frozen object: unchangeable, or a dict/list/set of such values."""
    cls = type(value)
    if cls in IMMUTABLE:
        return True
    if cls is dict:
        return not value or all(_read_only(k) and _read_only(v) for k, v in value.items())  # type: ignore[attr-defined]
    if cls is list or cls is set:
        return all(_read_only(item) for item in value)  # type: ignore[attr-defined]
    return is_frozen(value)


def all_frozen(items: Iterable[object]) -> bool:
    """True if every item may be shared."""
    return all(type(item) in IMMUTABLE or is_frozen(item) for item in items)


def how_to_hand_out(value: object) -> int:
    """``SHARE``, ``LIST`` (a list of shareable items: copy the list only) or ``COPY``."""
    if is_frozen(value):
        return SHARE
    if type(value) is list and all_frozen(value):
        return LIST
    return COPY


def hand_out(value: Any, how: int, serializer: Serializer) -> Any:
    """``value`` as a caller may have it: itself, a new list, or a deep copy."""
    if how == SHARE:
        return value
    if how == LIST:
        return list(value)
    return serializer.loads(serializer.dumps(value))
