"""How a task stops to pause its run: the exception ``interrupt()`` raises."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["NodeInterrupt"]


class NodeInterrupt(BaseException):
    """Raised by :func:`interrupt` to stop the task; the engine catches it and pauses.

    ``records`` holds one record per pending interrupt (parallel tool calls of one task, or
    a paused subgraph, may raise several at once). It derives from ``BaseException`` so that
    a node's ``except Exception`` cannot swallow it.
    """

    def __init__(self, records: Sequence[dict[str, Any]]) -> None:
        super().__init__(*[r.get("value") for r in records])
        self.records = list(records)

    @classmethod
    def combine(cls, interrupts: Sequence[NodeInterrupt]) -> NodeInterrupt:
        """One interrupt holding every record of ``interrupts`` (in order)."""
        return cls([record for i in interrupts for record in i.records])
