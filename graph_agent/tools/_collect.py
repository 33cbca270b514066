"""Turning what users hand over as "tools" into ``ToolCallback``s."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .callback import ToolCallback


def as_tool_callbacks(items: Iterable[Any]) -> list[ToolCallback]:
    """Callbacks for ``items``: ``ToolCallback``s (``@tool`` functions are) as they are,
    ``ToolCallbackProvider``s by their ``get_tool_callbacks()``, other objects by their
    ``@tool`` methods. Anything else is a ``TypeError`` naming it."""
    callbacks: list[ToolCallback] = []
    for item in items:
        if isinstance(item, ToolCallback):
            callbacks.append(item)
        elif callable(getattr(item, "get_tool_callbacks", None)):
            callbacks.extend(item.get_tool_callbacks())
        elif isinstance(item, (str, int, float, bool, type(None))) or callable(item):
            raise TypeError(
                f"{item!r} is not a tool: decorate functions with @tool, pass objects with "
                "@tool methods, ToolCallbackProviders, or ToolCallbacks"
            )
        else:
            from .method import ToolCallbacks

            callbacks.extend(ToolCallbacks.from_object(item))
    return callbacks
