"""Front-end tools: the tools an AG-UI client declares (``RunAgentInput.tools``), offered to
an agent's model, and answered by the client.

A served agent opts in with ``tool_providers=[ClientTools()]``. The AG-UI route hands the
client's tools to the run (its context, ``ag_ui_tools``); ``ClientTools`` offers them to the
model beside the agent's own. A call to one pauses the thread (``interrupt``, value
``{"type": "client_tool", "tool_call_id", "name", "arguments"}``): the AG-UI run ends with
the call left for the client (``pendingToolCallIds``), and the client's next input answers
it with a tool message, which resumes the call with that result. The call then goes through
the agent's tool node like any other: its result is kept in the thread, hooks see it.

No web framework and no ``ag-ui-protocol`` here: an agent module imports it without them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from ..graph import interrupt
from ..tools import ToolContext, ToolDefinition, ToolMetadata, ToolProviderRequest

__all__ = ["CLIENT_TOOL", "CLIENT_TOOLS_KEY", "ClientTool", "ClientTools", "is_client_call"]

CLIENT_TOOLS_KEY: Final = "ag_ui_tools"
"""The run context's key under which the AG-UI route puts the client's tools."""

CLIENT_TOOL: Final = "client_tool"
"""The ``type`` of the pause of a front-end tool's call."""

_EMPTY_SCHEMA: Final = '{"type": "object", "properties": {}}'


def is_client_call(value: Any) -> bool:
    """Whether a pause's ``value`` is a front-end tool's call waiting for the client."""
    return isinstance(value, Mapping) and value.get("type") == CLIENT_TOOL


class ClientTool:
    """One tool a client declared: offered to the model as it was declared; a call to it
    pauses the thread until the client sends its result (``interrupt``), which is what the
    model gets."""

    def __init__(self, name: str, description: str, parameters: Any = None) -> None:
        schema = json.dumps(parameters) if isinstance(parameters, Mapping) else _EMPTY_SCHEMA
        self._definition = ToolDefinition(name, description, schema)

    @property
    def tool_definition(self) -> ToolDefinition:
        return self._definition

    @property
    def tool_metadata(self) -> ToolMetadata:
        return ToolMetadata()

    def call(self, tool_input: str, tool_context: ToolContext | None = None) -> str:
        try:
            arguments: Any = json.loads(tool_input) if tool_input else {}
        except ValueError:
            arguments = tool_input
        answer = interrupt(
            {
                "type": CLIENT_TOOL,
                "tool_call_id": tool_context.tool_call_id if tool_context else None,
                "name": self._definition.name,
                "arguments": arguments,
            }
        )
        return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)

    async def acall(self, tool_input: str, tool_context: ToolContext | None = None) -> str:
        return self.call(tool_input, tool_context)

    def __repr__(self) -> str:
        return f"ClientTool({self._definition.name!r})"


class ClientTools:
    """A tool provider (``ReactAgent(..., tool_providers=[ClientTools()])``) that offers the
    model the tools the AG-UI client of the run declared; none on a run that has none (an
    Agent Protocol run, or an AG-UI client that declares no tools)."""

    def __call__(self, request: ToolProviderRequest) -> list[ClientTool]:
        config = request.config
        declared = config.metadata.get(CLIENT_TOOLS_KEY) if config is not None else None
        if not isinstance(declared, list):
            return []
        return [
            ClientTool(str(t["name"]), str(t.get("description", "")), t.get("parameters"))
            for t in declared
            if isinstance(t, Mapping) and isinstance(t.get("name"), str)
        ]

    def __repr__(self) -> str:
        return "ClientTools()"
