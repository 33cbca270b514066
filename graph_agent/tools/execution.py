"""What happens when a tool fails, or the model names a tool that does not exist."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from ..errors import ToolArgumentsError, ToolExecutionException, UnknownToolError

__all__ = [
    "DefaultToolExecutionExceptionProcessor",
    "ToolExecutionExceptionProcessor",
    "UnknownToolStrategy",
    "respond_to_unknown_tool",
]


@runtime_checkable
class ToolExecutionExceptionProcessor(Protocol):
    """Turns a failed tool call into the text the model receives, or raises."""

    def process(self, exception: ToolExecutionException) -> str: ...


class DefaultToolExecutionExceptionProcessor:
    """The model gets the failure's message, so it can correct its call or tell the user.

    With ``always_throw=True`` the exception is raised instead (and the tool loop stops).
    Exception types listed in ``rethrow`` are re-raised as themselves when the tool raised
    them, whatever ``always_throw`` says (invalid arguments, the model's mistake, still go
    back to the model unless ``always_throw``).
    """

    def __init__(
        self, always_throw: bool = False, rethrow: Sequence[type[BaseException]] = ()
    ) -> None:
        self.always_throw = always_throw
        self.rethrow = tuple(rethrow)

    def __repr__(self) -> str:
        return f"DefaultToolExecutionExceptionProcessor(always_throw={self.always_throw})"

    def process(self, exception: ToolExecutionException) -> str:
        cause = exception.__cause__
        if (
            self.rethrow
            and isinstance(cause, self.rethrow)
            and not isinstance(exception, ToolArgumentsError)
        ):
            raise cause
        if self.always_throw:
            raise exception
        return str(exception)


UnknownToolStrategy: TypeAlias = Literal["respond", "throw"] | Callable[[str, Sequence[str]], str]


def respond_to_unknown_tool(name: str, available: Sequence[str]) -> str:
    """The default answer to a call of a tool that does not exist: what exists instead."""
    offer = ", ".join(available) if available else "none"
    return (
        f"Error: there is no tool named '{name}'. Available tools: {offer}. "
        "Call one of these, or answer without a tool."
    )


def unknown_tool_response(strategy: UnknownToolStrategy, name: str, available: list[str]) -> str:
    """Apply ``strategy`` to an unknown tool name: a response for the model, or an error."""
    if strategy == "throw":
        raise UnknownToolError(
            f"the model called tool '{name}', which is not available; available tools: "
            f"{available}. Register it with the model's tools, or use "
            "unknown_tool_strategy='respond' to let the model correct itself",
            tool_name=name,
            available=available,
        )
    if strategy == "respond":
        return respond_to_unknown_tool(name, available)
    if callable(strategy):
        return strategy(name, available)
    raise ValueError(
        f"unknown_tool_strategy must be 'respond', 'throw' or a callable (name, available) "
        f"-> str, got {strategy!r}"
    )
