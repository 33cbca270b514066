"""Collecting the tools that are methods of an object: ``ToolCallbacks``.

``MethodToolCallback`` (a ``@tool`` method bound to an object) lives with
``FunctionToolCallback``, which makes one when a tool method is read from an instance; it is
importable from here too."""

from __future__ import annotations

from typing import Any

from .callback import ToolCallback
from .function import FunctionToolCallback, MethodToolCallback

__all__ = ["MethodToolCallback", "ToolCallbacks"]


class ToolCallbacks:
    """Collecting tools from objects."""

    @staticmethod
    def from_object(tool_object: object, *more: object) -> list[ToolCallback]:
        """The ``@tool`` methods of each object, bound to it, in definition order (inherited
        tools first, an override keeping its base's place).

        Raises ``ValueError`` when an object has no ``@tool`` method or when two tools share a
        name (naming both), and ``TypeError`` for a class where an instance is needed.
        """
        callbacks: list[ToolCallback] = []
        owners: dict[str, str] = {}
        for obj in (tool_object, *more):
            found = _tools_of(obj)
            if not found:
                raise ValueError(
                    f"{_describe(obj)} has no @tool methods: decorate its tool methods with "
                    "@tool, or pass tool callbacks directly"
                )
            for attribute, callback in found:
                name = callback.tool_definition.name
                where = f"{_describe(obj)}.{attribute}"
                if name in owners:
                    raise ValueError(
                        f"duplicate tool name '{name}': {owners[name]} and {where}; give one "
                        "of them another name with @tool(name=...)"
                    )
                owners[name] = where
                callbacks.append(callback)
        return callbacks


def _tools_of(obj: object) -> list[tuple[str, ToolCallback]]:
    if isinstance(obj, type):
        raise TypeError(
            f"pass an instance of {obj.__qualname__}, not the class, to collect its tools"
        )
    attributes: dict[str, Any] = {}
    for klass in reversed(type(obj).__mro__):
        for attribute, value in vars(klass).items():
            if attribute in attributes or _is_tool(value):
                attributes[attribute] = value
    found: list[tuple[str, ToolCallback]] = []
    for attribute, value in attributes.items():
        if not _is_tool(value):
            continue  # overridden by something that is not a tool
        callback = getattr(obj, attribute)
        if isinstance(callback, ToolCallback):
            found.append((attribute, callback))
    return found


def _is_tool(value: object) -> bool:
    if isinstance(value, classmethod) and isinstance(value.__func__, FunctionToolCallback):
        raise TypeError(
            f"put @tool above @classmethod (not below) for tool '{value.__func__.tool_definition.name}'"
        )
    if isinstance(value, staticmethod):
        value = value.__func__
    return isinstance(value, FunctionToolCallback)


def _describe(obj: object) -> str:
    return f"{type(obj).__qualname__} object"
