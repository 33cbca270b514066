"""slot_setters: a frozen slotted dataclass made field by field is the one its __init__ makes."""

from __future__ import annotations

import dataclasses

import pytest

from checkpoint.slots import slot_setters


@dataclasses.dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0


def test_setters_make_the_object_init_makes() -> None:
    set_x, set_y = slot_setters(Point)
    point = object.__new__(Point)
    set_x(point, 1)
    set_y(point, 2)
    assert point == Point(1, 2) and repr(point) == "Point(x=1, y=2)"
    assert hash(point) == hash(Point(1, 2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 3  # type: ignore[misc]


def test_a_class_without_slots_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Plain:
        x: int

    with pytest.raises(TypeError, match="not a dataclass with slots=True"):
        slot_setters(Plain)
    with pytest.raises(TypeError, match="not a dataclass with slots=True"):
        slot_setters(int)
