"""Checkpoint and CheckpointDelta write their __init__ out (checkpoint/base.py): it must take
what the dataclass's own would, and make the same object."""

from __future__ import annotations

import dataclasses
import inspect
from datetime import datetime, timezone

import pytest

from checkpoint import Checkpoint, CheckpointDelta


@pytest.mark.parametrize("cls", [Checkpoint, CheckpointDelta])
def test_init_takes_the_fields_in_order_with_their_defaults(cls: type) -> None:
    params = list(inspect.signature(cls).parameters.values())
    fields = dataclasses.fields(cls)
    assert [p.name for p in params] == [f.name for f in fields]
    for param, field in zip(params, fields):
        if field.default_factory is not dataclasses.MISSING:
            assert repr(param.default) == "<factory>"
        elif field.default is not dataclasses.MISSING:
            assert param.default == field.default
        else:
            assert param.default is inspect.Parameter.empty


def test_a_checkpoint_gets_fresh_dicts_and_stays_frozen() -> None:
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    one = Checkpoint("c1", "t", None, 0, ("a",), {"x": 1}, at)
    two = Checkpoint("c1", "t", None, 0, ("a",), {"x": 1}, at)
    assert one == two and one.metadata == {} and one.metadata is not two.metadata
    assert (one.interrupts, one.resume_values, one.pending_writes) == ((), {}, {})
    given = Checkpoint(
        id="c2", thread_id="t", parent_id="c1", step=1, next_nodes=(), values={},
        created_at=at, metadata={"source": "loop"}, interrupts=({"i": 1},),
        resume_values={"r": [1]}, pending_writes={"p": 1},
    )  # fmt: skip
    assert [getattr(given, f.name) for f in dataclasses.fields(Checkpoint)] == [
        "c2", "t", "c1", 1, (), {}, at, {"source": "loop"}, ({"i": 1},), {"r": [1]}, {"p": 1}
    ]  # fmt: skip
    assert dataclasses.replace(given, step=2).step == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        given.step = 3  # type: ignore[misc]
    delta = CheckpointDelta(appended={"m": [1]})
    assert (delta.appended, delta.replaced) == ({"m": [1]}, {})
    assert CheckpointDelta().appended is not CheckpointDelta().appended
    with pytest.raises(dataclasses.FrozenInstanceError):
        delta.replaced = {}  # type: ignore[misc]
