"""Names of the two virtual nodes."""

from __future__ import annotations

START = "__start__"
END = "__end__"
