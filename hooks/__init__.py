"""Agent hooks and interceptors (before/after model and agent).

The hook types arrive with ``ReactAgent``; this package already exists so that
``import hooks`` works in any order with ``graph_agent`` and ``checkpoint``.
"""

from __future__ import annotations

__all__: list[str] = []
