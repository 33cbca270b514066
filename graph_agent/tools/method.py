"""Tools that are methods of an object: ``MethodToolCallback`` and ``ToolCallbacks``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from .callback import ToolCallback
from .function import _UNBOUND, FunctionToolCallback, _Binding

__all__ = ["MethodToolCallback", "ToolCallbacks"]

P = ParamSpec("P")
R = TypeVar("R")


class MethodToolCallback(FunctionToolCallback[P, R]):
    """A ``@tool`` method bound to ``tool_object``: the same tool (name, schema, metadata,
    converter) with ``self`` supplied by the object. Callable as the bound method.

    ``tool_method`` is the ``@tool``-decorated method (as read from the class), or a plain
    function of the class, which is then made a tool with the defaults of ``@tool``. For a
    ``@tool`` classmethod, ``tool_object`` is the class. Two callbacks are equal when they wrap
    the same method of the same object, like bound methods.
    """

    def __init__(
        self, tool_object: object, tool_method: FunctionToolCallback[Any, Any] | Callable[..., Any]
    ) -> None:
        unbound = (
            tool_method
            if isinstance(tool_method, FunctionToolCallback)
            else FunctionToolCallback(tool_method)
        )
        if unbound._bound is not _UNBOUND:
            raise TypeError(f"{unbound!r} is already bound to an object")
        if unbound._spec.binding is _Binding.NONE:
            raise TypeError(
                f"tool '{unbound.tool_definition.name}' is not a method (its first parameter "
                "is not self, and it is no classmethod): use it as a FunctionToolCallback"
            )
        self._adopt(unbound._spec, tool_object)

    @property
    def tool_object(self) -> object:
        """The object (or, for a classmethod, the class) the method is bound to."""
        return self._bound

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MethodToolCallback):
            return NotImplemented
        return self._bound is other._bound and self._spec is other._spec

    def __hash__(self) -> int:
        return hash((id(self._bound), id(self._spec)))

    def __repr__(self) -> str:
        owner = type(self._bound).__qualname__
        if isinstance(self._bound, type):
            owner = self._bound.__qualname__
        return f"MethodToolCallback(name={self.tool_definition.name!r}, object={owner})"


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
