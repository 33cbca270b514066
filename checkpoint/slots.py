"""Frozen slotted dataclasses made fast where they are made on every step (checkpoints,
model responses, tool calls, model requests): one helper for every package."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

__all__ = ["slot_setters"]

Setter = Callable[[Any, Any], None]


def slot_setters(cls: type) -> tuple[Setter, ...]:
    """The setters of the field slots of ``cls`` (a ``slots=True`` dataclass), in field order.

    A frozen dataclass's generated ``__init__`` sets each field through
    ``object.__setattr__``; calling these setters on ``object.__new__(cls)`` makes the same
    object (same fields, ``repr``, ``==``, ``hash``, still frozen) with one C call per field.
    """
    if not dataclasses.is_dataclass(cls) or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__qualname__} is not a dataclass with slots=True")
    return tuple(cls.__dict__[field.name].__set__ for field in dataclasses.fields(cls))
