"""The interface of a callable tool."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .context import ToolContext
from .definition import ToolDefinition, ToolMetadata

__all__ = ["ToolCallback"]


@runtime_checkable
class ToolCallback(Protocol):
    """A tool the framework can offer a model and run.

    ``call`` takes the model's raw JSON arguments and returns the text the model gets back.
    It raises ``ToolExecutionException`` when the arguments are invalid (the message lists
    what is wrong) or when the tool itself raises (the tool's exception is the cause).
    ``acall`` is the async twin; it never blocks the loop.
    """

    @property
    def tool_definition(self) -> ToolDefinition: ...

    @property
    def tool_metadata(self) -> ToolMetadata: ...

    def call(self, tool_input: str, tool_context: ToolContext | None = None) -> str: ...

    async def acall(self, tool_input: str, tool_context: ToolContext | None = None) -> str: ...
