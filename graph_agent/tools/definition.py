"""What a model is told about a tool, and what the framework needs to know about it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

__all__ = ["ToolDefinition", "ToolMetadata"]


@dataclasses.dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as the model sees it: name, description, and a JSON schema of its input (a
    JSON string, as Spring AI keeps it)."""

    name: str
    description: str
    input_schema: str = '{"type": "object", "properties": {}}'

    @property
    def schema(self) -> dict[str, Any]:
        """``input_schema`` parsed."""
        parsed: dict[str, Any] = json.loads(self.input_schema)
        return parsed


@dataclasses.dataclass(frozen=True, slots=True)
class ToolMetadata:
    """How the framework treats a tool's result: with ``return_direct`` the result goes to the
    caller instead of back to the model (when every tool of the batch is return-direct)."""

    return_direct: bool = False
