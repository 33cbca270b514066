"""Finding tools: by name (resolvers), as a fixed set (providers), or per request (``ToolProvider``);
``as_tool_callbacks`` turns tools in any form into ``ToolCallback``s."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..messages import Message, UserMessage
from .callback import ToolCallback

if TYPE_CHECKING:
    from ..graph import OverAllState, RunnableConfig

__all__ = [
    "DelegatingToolCallbackResolver",
    "FunctionToolProvider",
    "StaticToolCallbackProvider",
    "StaticToolCallbackResolver",
    "ToolCallbackProvider",
    "ToolCallbackResolver",
    "ToolProvider",
    "ToolProviderRequest",
    "as_tool_callbacks",
    "tool_provider",
]


def as_tool_callbacks(items: Iterable[Any]) -> list[ToolCallback]:
    """Tools in every form a user hands them over, as ``ToolCallback``s: ``ToolCallback``s
    (``@tool`` functions are) as they are,
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


@runtime_checkable
class ToolCallbackResolver(Protocol):
    """Finds a tool by the name the model used; ``None`` when it does not know the name."""

    def resolve(self, tool_name: str) -> ToolCallback | None: ...


class StaticToolCallbackResolver:
    """Resolves the names of a fixed list of tools. Two tools with one name are a
    ``ValueError``."""

    def __init__(self, tool_callbacks: Iterable[ToolCallback]) -> None:
        self._by_name: dict[str, ToolCallback] = _by_name(tool_callbacks)

    @property
    def tool_names(self) -> list[str]:
        """The names it resolves, in the order the tools were given."""
        return list(self._by_name)

    def resolve(self, tool_name: str) -> ToolCallback | None:
        return self._by_name.get(tool_name)

    def __repr__(self) -> str:
        return f"StaticToolCallbackResolver({self.tool_names})"


class DelegatingToolCallbackResolver:
    """Asks each resolver in turn; the first one that knows the name wins."""

    def __init__(self, resolvers: Iterable[ToolCallbackResolver]) -> None:
        self.resolvers: list[ToolCallbackResolver] = list(resolvers)

    def resolve(self, tool_name: str) -> ToolCallback | None:
        for resolver in self.resolvers:
            callback = resolver.resolve(tool_name)
            if callback is not None:
                return callback
        return None

    def __repr__(self) -> str:
        return f"DelegatingToolCallbackResolver({self.resolvers!r})"


@runtime_checkable
class ToolCallbackProvider(Protocol):
    """A source of tools, e.g. a set of tools shared by several clients or agents."""

    def get_tool_callbacks(self) -> Sequence[ToolCallback]: ...


class StaticToolCallbackProvider:
    """Provides fixed tools: ``ToolCallback``s (``@tool`` functions are), objects with ``@tool``
    methods, and other providers, flattened in the order given.

    Raises ``TypeError`` for something that is not a tool and ``ValueError`` for an object
    without ``@tool`` methods or two tools with one name.
    """

    def __init__(self, *tools: object) -> None:
        callbacks = as_tool_callbacks(tools)
        self._callbacks: tuple[ToolCallback, ...] = tuple(_by_name(callbacks).values())

    def get_tool_callbacks(self) -> Sequence[ToolCallback]:
        return self._callbacks

    def __repr__(self) -> str:
        names = [c.tool_definition.name for c in self._callbacks]
        return f"StaticToolCallbackProvider({names})"


@dataclasses.dataclass(frozen=True)
class ToolProviderRequest:
    """What a ``ToolProvider`` decides on: the conversation so far, and, inside an agent, the
    graph state and the run's config."""

    messages: Sequence[Message]
    state: OverAllState | None = None
    config: RunnableConfig | None = None

    @property
    def last_user_message(self) -> UserMessage | None:
        """The latest ``UserMessage`` of ``messages``, or ``None``."""
        for message in reversed(self.messages):
            if isinstance(message, UserMessage):
                return message
        return None

    @property
    def last_user_text(self) -> str:
        """The text of the latest user message (``""`` without one)."""
        message = self.last_user_message
        return message.text if message is not None else ""


@runtime_checkable
class ToolProvider(Protocol):
    """Chooses the tools offered to the model for one request (one model call): called with a
    ``ToolProviderRequest``, it returns the tools for that call. A plain function with this
    signature is one; ``tool_provider`` makes one from a looser function."""

    def __call__(self, request: ToolProviderRequest) -> Sequence[ToolCallback]: ...


ProviderResult = Iterable[object] | ToolCallback | None


class FunctionToolProvider:
    """A ``ToolProvider`` from ``fn(request)`` returning tools in any form
    ``StaticToolCallbackProvider`` takes (callbacks, objects with ``@tool`` methods, providers,
    a list of these) or ``None`` for no tools. The result is checked like a
    ``StaticToolCallbackProvider``'s arguments each time."""

    def __init__(self, fn: Callable[[ToolProviderRequest], ProviderResult]) -> None:
        self.fn = fn
        self.__wrapped__ = fn

    def __call__(self, request: ToolProviderRequest) -> Sequence[ToolCallback]:
        chosen = self.fn(request)
        if chosen is None:
            return []
        if isinstance(chosen, ToolCallback):
            return [chosen]
        return list(StaticToolCallbackProvider(*chosen).get_tool_callbacks())

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        return f"FunctionToolProvider({name})"


def tool_provider(fn: Callable[[ToolProviderRequest], ProviderResult]) -> FunctionToolProvider:
    """Decorator making ``fn(request)`` a ``ToolProvider``::

    @tool_provider
    def booking_tools(request: ToolProviderRequest):
        if "booking" in request.last_user_text.lower():
            return [get_booking_details]
        return None
    """
    return FunctionToolProvider(fn)


def _by_name(callbacks: Iterable[Any]) -> dict[str, ToolCallback]:
    by_name: dict[str, ToolCallback] = {}
    for callback in callbacks:
        if not isinstance(callback, ToolCallback):
            raise TypeError(f"{callback!r} is not a ToolCallback")
        name = callback.tool_definition.name
        if name in by_name:
            raise ValueError(
                f"duplicate tool name '{name}': {by_name[name]!r} and {callback!r}; every tool "
                "needs its own name"
            )
        by_name[name] = callback
    return by_name
