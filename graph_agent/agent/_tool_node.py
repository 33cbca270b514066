"""The agent's tool node: run the last message's tool calls (only tools the model was
offered) and keep their responses.

``tool_node`` reads what the node needs from the agent's parts once, when the graph is
built; at each step the node asks the agent's tools which the calls may use (``_toolset``)
and, with an ``output_type``, which calls are final answers (``_output``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from checkpoint.effects import Effect

from .._runtime.workers import NodeCut, run_cancelled
from ..graph import OverAllState, RunnableConfig, Updates
from ..messages import AssistantMessage
from ..tools import ToolCallback, ToolCallingManager, ToolContext
from ._handoff import handoff_command, to_parent
from ._keys import MESSAGES, REJECTED
from ._node_kit import Logic, last_message
from ._unanswered import cancelled_responses
from ._usage import moved_to_response

if TYPE_CHECKING:
    from ._parts import AgentParts
    from ._toolset import AgentTools


class _RunTools(Effect):
    """Run the tool calls of ``message`` with ``tools``, those the model was offered, in
    ``context`` (which holds the agent's ``tool_context`` entries: no options are needed)."""

    __slots__ = ("context", "manager", "message", "tools")

    def __init__(
        self,
        manager: ToolCallingManager,
        message: AssistantMessage,
        tools: Sequence[ToolCallback],
        context: ToolContext,
    ) -> None:
        self.manager = manager
        self.message = message
        self.tools = tools
        self.context = context

    def run(self, context: Any) -> Any:
        return self.manager.execute_message(
            self.message, tool_context=self.context, tool_callbacks=self.tools
        )

    def arun(self, context: Any) -> Awaitable[Any]:
        return self.manager.aexecute_message(
            self.message, tool_context=self.context, tool_callbacks=self.tools
        )


def tool_node(parts: AgentParts, tools: AgentTools) -> Logic:
    """The tool node of the agent made of ``parts``, running ``tools`` (shared with the
    model node). What the tools wrote to ``extra_state`` is merged in call order by each
    key's strategy, as if each call had been a node of its own. With an ``output_type``, a
    final-answer call beside other calls is not run but answered (call it again alone), and
    a return-direct batch goes back to the model, which answers in the schema. A batch with
    a handoff (``parts.handoffs``: tool name -> agent) ends with the conversation moving to
    that agent (``_handoff``)."""
    manager = parts.manager
    tool_context = parts.tool_context
    store = parts.store
    output_key = parts.output_key
    output = parts.output
    handoffs = parts.handoffs

    def run_tools(state: OverAllState, config: RunnableConfig, last: AssistantMessage) -> _RunTools:
        # Built here, not in the logic: its locals (the state's copy of the messages, the
        # options) would stay alive in the logic's frame while the tools run. No Prompt and
        # no response around the message: the node keeps only the tools' answers, so a long
        # conversation is not copied for each tool step.
        earlier = (state.get(MESSAGES) or [])[:-1] if tools.providers else ()
        offered = tools.for_tool_calls(earlier, state, config)
        context = ToolContext({**tool_context, "state": state, "config": config, "store": store})
        return _RunTools(manager, last, offered, context)

    def logic(state: OverAllState, config: RunnableConfig) -> Generator[Effect, Any, Any]:
        last = last_message(state)
        if not isinstance(last, AssistantMessage) or not last.tool_calls:
            return {}
        calls = last
        if output is not None:
            calls, finals = output.split(last)
            if finals and not calls.tool_calls:  # only final-answer calls: the model node's
                return {MESSAGES: [output.answered(last, None, finals)]}
        try:
            result = yield run_tools(state, config, calls)
        except asyncio.CancelledError as stop:
            if not run_cancelled(stop):
                raise
            # every call answered: what finished (a sync tool's thread, which ran on to its
            # end, too) with its result, the rest as cancelled
            cut = cancelled_responses(last.tool_calls)
            if cut is None:
                raise
            raise NodeCut({MESSAGES: [cut]}) from None
        # what the tools wrote to ``extra_state``, in call order
        written = [extra for extra in result.extra_states if extra]
        responses = result.tool_response
        if written:
            responses, written = moved_to_response(responses, written)
        if output is not None and calls is not last:
            responses = output.answered(last, responses, finals)
        if handoffs:
            moved = handoff_command(last.tool_calls, responses, handoffs)
            if moved is not None:
                return to_parent({**_joined(written), MESSAGES: [moved[0]]}, moved[1])
        update: dict[str, Any] = {MESSAGES: [responses]}
        if result.return_direct and output is None:
            direct = AssistantMessage(responses.text, metadata={"return_direct": True})
            update[MESSAGES].append(direct)
            if output_key:
                update[output_key] = direct.text
        if state.get(REJECTED):
            update[REJECTED] = None
        # (a tool may set the jump itself: ``agent_nodes`` clears it only when none did)
        return Updates(*written, update) if written else update

    return logic


def _joined(extras: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the tools of a batch that handed off wrote to ``extra_state``, later calls'
    values replacing earlier ones (the conversation moves on; no merge node runs)."""
    joined: dict[str, Any] = {}
    for extra in extras:
        joined.update(extra)
    return joined
