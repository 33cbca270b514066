"""``agent.as_tool()``: an agent that another agent calls like a tool.

Called from a tool node, the agent runs as a subgraph of the calling task: in the caller's
thread under the namespace ``<tool name>:<id of the call>``, with the caller's saver and
event bus. So its model deltas and tool calls are in the caller's ``stream_events`` with that
namespace, an ``interrupt()`` inside it (a ``HumanInTheLoopHook``) pauses the caller, and
resuming the caller continues it where it stopped; parallel calls run apart. Called outside a
run, it runs on a fresh thread of its own.
"""

from __future__ import annotations

import json
from typing import Any

from .._runtime.task_scope import current_task
from ..errors import GraphRecursionError, ToolArgumentsError
from ..graph import OverAllState, RunnableConfig, RunOutcome
from ..messages import UserMessage
from ..tools import ToolContext, ToolDefinition, ToolMetadata
from ._agent_ref import AgentRef
from ._keys import MESSAGES
from ._subagent import NAME, Shape, SubAgentNode, final_answer, with_task
from ._usage import SUBAGENT_USAGE

__all__ = ["AgentTool"]

_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {"input": {"type": "string", "description": "The request for the agent."}},
        "required": ["input"],
        "additionalProperties": False,
    }
)


class AgentTool:
    """A ``ToolCallback`` that runs ``agent`` on the model's ``input`` and returns its answer
    (its text; the JSON of its validated object when it has an ``output_type``). With
    ``history=True`` the agent also sees the caller's conversation (without tool traffic)
    before the request."""

    def __init__(
        self,
        agent: AgentRef,
        name: str | None = None,
        description: str | None = None,
        history: bool = False,
    ) -> None:
        tool_name = name or agent.name
        if not NAME.match(tool_name):
            raise ValueError(
                f"as_tool: tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-'; "
                "pass name=..."
            )
        text = description or agent.description or f"Ask the agent '{agent.name}'."
        self.agent = agent
        self.history = history
        self.tool_definition = ToolDefinition(tool_name, text, _SCHEMA)
        self.tool_metadata = ToolMetadata()
        self._node = SubAgentNode(agent, Shape.ANSWER, node=tool_name)

    def __repr__(self) -> str:
        return f"AgentTool({self.tool_definition.name!r} -> {self.agent.name!r})"

    def _request(self, tool_input: str) -> str:
        try:
            data = json.loads(tool_input) if tool_input.strip() else {}
        except ValueError as error:
            raise ToolArgumentsError(
                f"arguments are not JSON: {error}", tool_name=self.tool_definition.name
            ) from None
        request = data.get("input") if isinstance(data, dict) else None
        if not isinstance(request, str) or not request.strip():
            raise ToolArgumentsError(
                'give the request as {"input": "..."} (a non-empty string)',
                tool_name=self.tool_definition.name,
            )
        return request

    def _entry(self, request: str, context: ToolContext | None) -> tuple[OverAllState, Any]:
        messages: list[Any] = [UserMessage(request)]
        if self.history and context is not None and context.state is not None:
            messages = with_task(context.state.get(MESSAGES), request)
        config = context.config if context is not None else None
        return OverAllState({MESSAGES: messages}), config

    def _answer(self, update: Any) -> str:
        if self.agent.output_key and self.agent.output_key in update:
            value = update[self.agent.output_key]
            if not isinstance(value, str):
                return _as_json(value)
        answer = final_answer(update.get(MESSAGES))
        return answer.text if answer is not None else ""

    def _counted(self, update: Any, context: ToolContext | None) -> str:
        """The answer; the run's usage goes to the call's ``extra_state``, which the tool
        node moves onto the tool response (the caller's usage counts it)."""
        answer = final_answer(update.get(MESSAGES))
        usage = answer.metadata.get("usage") if answer is not None else None
        if context is not None and usage:
            context.extra_state[SUBAGENT_USAGE] = usage
        return self._answer(update)

    def _alone(self, outcome: RunOutcome, config: Any) -> str:
        """The answer of a run on a thread of its own; a paused one raises (the caller,
        outside a run, cannot resume it: no answer is not an empty answer)."""
        self.agent.running.answer(outcome, RunnableConfig.coerce(config).thread_id)
        return self._answer(outcome.values)

    def call(self, tool_input: str, tool_context: ToolContext | None = None) -> str:
        request = self._request(tool_input)
        state, config = self._entry(request, tool_context)
        if current_task.get() is not None and isinstance(config, RunnableConfig):
            return self._counted(self._node(state, config), tool_context)
        agent = self.agent
        running = agent.running
        fresh = running.config(state.data(), None)
        try:
            return self._alone(agent.graph.run(running.input(state.data()), fresh), fresh)
        except GraphRecursionError as error:
            running.raise_limit_error(error, fresh)

    async def acall(self, tool_input: str, tool_context: ToolContext | None = None) -> str:
        request = self._request(tool_input)
        state, config = self._entry(request, tool_context)
        if current_task.get() is not None and isinstance(config, RunnableConfig):
            return self._counted(await self._node.acall(state, config), tool_context)
        agent = self.agent
        running = agent.running
        fresh = running.config(state.data(), None)
        try:
            return self._alone(await agent.graph.arun(running.input(state.data()), fresh), fresh)
        except GraphRecursionError as error:
            running.raise_limit_error(error, fresh)


def _as_json(value: Any) -> str:
    from pydantic import TypeAdapter

    return TypeAdapter(type(value)).dump_json(value).decode()
