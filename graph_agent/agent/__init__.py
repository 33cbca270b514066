"""``ReactAgent``: tools in a loop around a model, on the graph engine, with hooks."""

from __future__ import annotations

from .base import WITHDRAWN, BaseAgent
from .builder import ReactAgentBuilder
from .react import ReactAgent

__all__ = ["WITHDRAWN", "BaseAgent", "ReactAgent", "ReactAgentBuilder"]
