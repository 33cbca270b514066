"""A pause's record, as a checkpoint stores it (``Checkpoint.interrupts``): a dict of
``id``, ``node``, ``when``, ``value`` and ``ns``. The engine makes records here and reads
them as the ``Interrupt`` they describe."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal

from .._runtime.ids import derive_id
from .types import Interrupt

DURING: Final = "during"  # ``interrupt()`` inside a node: the pause waits for a resume value


def pause_record(
    interrupt_id: str,
    node: str,
    when: Literal["before", "after", "during"],
    value: Any,
    namespace: Iterable[str],
) -> dict[str, Any]:
    """The record of a pause, as a checkpoint stores it."""
    return {"id": interrupt_id, "node": node, "when": when, "value": value, "ns": list(namespace)}


def static_record(
    namespace: tuple[str, ...], base: Any, node: str, when: Literal["before", "after"]
) -> dict[str, Any]:
    """The record of an ``interrupt_before``/``interrupt_after`` pause."""
    return pause_record(derive_id(*namespace, base, node, when), node, when, None, namespace)


def interrupt_of(record: Mapping[str, Any]) -> Interrupt:
    """The pause a stored record describes."""
    return Interrupt(
        id=record["id"],
        node=record["node"],
        when=record["when"],
        value=record.get("value"),
        namespace=tuple(record.get("ns") or ()),
    )


def awaiting(records: Iterable[Mapping[str, Any]]) -> list[Interrupt]:
    """The pauses of ``records`` that wait for a resume value (``interrupt()`` calls)."""
    return [pause for pause in map(interrupt_of, records) if pause.when == DURING]


def waits_still(record: Mapping[str, Any], resume: Mapping[str, Any]) -> bool:
    """Whether the pause ``record`` still waits once its step runs again with ``resume``: an
    ``interrupt()`` that has no answer there. (A step running again is past its
    ``interrupt_before``/``interrupt_after`` pauses.)"""
    return record.get("when") == DURING and record.get("id") not in resume
