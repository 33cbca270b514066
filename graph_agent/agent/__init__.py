"""``ReactAgent``: tools in a loop around a model, on the graph engine, with hooks."""

from __future__ import annotations

from .builder import ReactAgentBuilder
from .react import WITHDRAWN, ReactAgent

__all__ = ["WITHDRAWN", "ReactAgent", "ReactAgentBuilder"]
