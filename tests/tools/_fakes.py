"""Hand-written ToolCallbacks: the manager must work with any implementation of the protocol."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from graph_agent.errors import ToolExecutionException
from graph_agent.tools.context import ToolContext
from graph_agent.tools.definition import ToolDefinition, ToolMetadata


class FnTool:
    """A tool whose arguments are a JSON object passed as keywords to ``fn``."""

    def __init__(
        self,
        name: str,
        fn: Callable[..., Any],
        return_direct: bool = False,
        delay: float = 0.0,
    ) -> None:
        self._definition = ToolDefinition(name, f"the {name} tool")
        self._metadata = ToolMetadata(return_direct=return_direct)
        self.fn = fn
        self.delay = delay
        self.threads: list[int] = []
        self.contexts: list[ToolContext | None] = []

    @property
    def tool_definition(self) -> ToolDefinition:
        return self._definition

    @property
    def tool_metadata(self) -> ToolMetadata:
        return self._metadata

    def call(self, tool_input: str, tool_context: ToolContext | None = None) -> str:
        self.threads.append(threading.get_ident())
        self.contexts.append(tool_context)
        try:
            args = json.loads(tool_input or "{}")
        except json.JSONDecodeError as exc:
            raise ToolExecutionException(
                f"arguments of '{self._definition.name}' are not valid JSON",
                tool_name=self._definition.name,
            ) from exc
        if self.delay:
            time.sleep(self.delay)
        try:
            result = self.fn(**args) if tool_context is None else self.fn(tool_context, **args)
        except Exception as exc:
            raise ToolExecutionException(
                f"tool '{self._definition.name}' failed: {type(exc).__name__}: {exc}",
                tool_name=self._definition.name,
            ) from exc
        return str(result)

    async def acall(self, tool_input: str, tool_context: ToolContext | None = None) -> str:
        return await asyncio.to_thread(self.call, tool_input, tool_context)
