"""An agent run as a node of another graph (a flow's sub-agent, a swarm member), or from a
tool call (``agent.as_tool()``): a subgraph run with the parent's saver and events, in the
parent's thread under a namespace, whose writes are shaped into what the parent keeps.

What a sub-agent hands back (``Shape``):

- ``ANSWER`` (flows): its final answer message only, plus every other state key it wrote
  (its ``output_key``...). Its model's requests, tool calls and tool results stay in its own
  checkpoints; the flow's conversation holds one answer per sub-agent.
- ``RESULT`` (a flow step that runs several sub-agents at once): no message; the final
  answer goes to the flow's private ``results`` key, by agent name, for the step that merges
  them.
- ``HISTORY`` (swarm members, handoffs): every message it added: agents that hand the
  conversation to each other share it whole, so nothing is lost when control comes back.

Never handed back: the sub-agent's private keys, and ``structured_response`` (its validated
answer goes to its ``output_key``): parallel sub-agents would otherwise write one key twice.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import GraphRecursionError
from ..graph import Command, CompiledGraph, OverAllState, RunnableConfig, SubgraphNode
from ..messages import AssistantMessage, Message, ToolResponseMessage, UserMessage
from ._agent_ref import AgentRef
from ._keys import MESSAGES
from ._usage import add_usage, run_usage

# What OpenAI accepts as a tool name; an agent's name becomes one (as_tool, handoffs).
NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
STRUCTURED = "structured_response"
RESULTS = "subagent_results"  # private key of a flow: {agent name: its answer}, to merge
ACTIVE_AGENT = "active_agent"  # a swarm's: the agent that has the conversation
# A flow's: {swarm's name: its active agent}: each swarm of a flow keeps its own (two
# swarms of one flow never write one key, nor take over each other's agent).
ACTIVE_AGENTS = "active_agents"


class Shape(enum.Enum):
    ANSWER = "answer"
    RESULT = "result"
    HISTORY = "history"


def final_answer(messages: Sequence[Message] | None) -> AssistantMessage | None:
    """The last assistant message that answers (asks for no tool)."""
    for message in reversed(messages or ()):
        if isinstance(message, AssistantMessage) and not message.tool_calls:
            return message
    return None


def conversation(messages: Sequence[Message] | None) -> list[Message]:
    """The conversation without tool traffic: user messages and answers. What an agent that
    is handed a task (a router's query, a supervisor's delegation) sees of what came before:
    any provider accepts it, whatever tools the earlier agents had."""
    kept: list[Message] = []
    for message in messages or ():
        if isinstance(message, ToolResponseMessage):
            continue
        if isinstance(message, AssistantMessage) and message.tool_calls:
            continue
        kept.append(message)
    return kept


def with_task(messages: Sequence[Message] | None, task: str | None) -> list[Message]:
    """The conversation, then ``task`` as the user's latest request (not repeated when the
    conversation already ends with it)."""
    kept = conversation(messages)
    if task:
        last = kept[-1] if kept else None
        if not (isinstance(last, UserMessage) and last.text == task):
            kept.append(UserMessage(task))
    return kept


def with_usage(
    answer: AssistantMessage | None, messages: Sequence[Message], extra: Any = None
) -> AssistantMessage | None:
    """``answer`` carrying in ``metadata["usage"]`` the tokens of every model call of
    ``messages`` (a sub-agent's run: the flow's usage totals count them all), plus ``extra``
    (a usage dict of calls that left no message: a router's)."""
    if answer is None:
        return None
    total = add_usage(run_usage(messages), extra)
    if not any(total.values()) or answer.metadata.get("usage") == total:
        return answer
    return answer.model_copy(update={"metadata": {**answer.metadata, "usage": total}})


class SubAgentNode(SubgraphNode):
    """The node that runs ``agent`` (its whole graph: a ReactAgent's loop, a flow, a swarm)
    as a subgraph, handing back what ``shape`` says."""

    def __init__(
        self,
        agent: AgentRef,
        shape: Shape,
        node: str | None = None,
        hidden: Iterable[str] = (),
        graph: CompiledGraph | None = None,
        result_key: str | None = None,
        structured: bool = False,
    ) -> None:
        graph = graph if graph is not None else agent.graph
        child = graph.subgraph_node(node or agent.name)
        super().__init__(child.name, child.spec, None, None, child.listeners)
        self.agent = agent
        self.shape = shape
        self.private = graph.private_keys
        # The parent's own bookkeeping (its private keys): not the sub-agent's to see.
        self.hidden = frozenset(hidden)
        # A swarm run by a flow (or a tool): its active agent is kept under its name.
        self.swarm = shape is not Shape.HISTORY and bool(getattr(agent, "handoffs", ()))
        # The parent flow's output_key, when this sub-agent's result is the flow's result
        # (the last step of a sequential flow or of a loop's round).
        self.result_key = result_key
        # A swarm's member answers for the swarm: its validated answer (or none, when it
        # has no output_type) is the swarm's ``structured_response``.
        self.structured = structured

    def _seen(self, state: OverAllState) -> OverAllState:
        if self.swarm:
            data = {
                k: v for k, v in state.data().items() if k not in self.hidden and k != ACTIVE_AGENTS
            }
            data[ACTIVE_AGENT] = (state.get(ACTIVE_AGENTS) or {}).get(self.agent.name)
            return OverAllState(data)
        if not self.hidden or not any(k in state for k in self.hidden):
            return state
        return OverAllState({k: v for k, v in state.data().items() if k not in self.hidden})

    def __repr__(self) -> str:
        return f"SubAgentNode({self.name!r}, {self.shape.value})"

    def handed_back(self, update: Mapping[str, Any]) -> dict[str, Any]:
        """What the parent keeps of the sub-agent's writes."""
        kept = {
            k: v
            for k, v in update.items()
            if k not in self.private and k != STRUCTURED and k != MESSAGES
        }
        if self.swarm and ACTIVE_AGENT in kept:
            kept[ACTIVE_AGENTS] = {self.agent.name: kept.pop(ACTIVE_AGENT)}
        if self.structured:
            kept[STRUCTURED] = update.get(STRUCTURED)
        added = update.get(MESSAGES)
        added = list(added) if isinstance(added, (list, tuple)) else []
        if self.shape is Shape.HISTORY:
            if added:
                kept[MESSAGES] = added
            return kept
        answer = with_usage(final_answer(added), added)
        if self.result_key is not None:
            own = self.agent.output_key
            if own and own in kept:
                kept[self.result_key] = kept[own]
            elif answer is not None:
                kept[self.result_key] = answer.text
        if self.shape is Shape.RESULT:
            kept[RESULTS] = {self.name: answer}
        elif answer is not None:
            kept[MESSAGES] = [answer]
        return kept

    def _finish(self, run: Any, handed: Mapping[str, Any]) -> dict[str, Any]:
        return self.handed_back(super()._finish(run, handed))

    def _to_parent(self, run: Any, handed: Mapping[str, Any], command: Command) -> Any:
        """A handoff from inside: what the sub-agent wrote up to it (the message that asked
        for the handoff) comes first, then the command's own update (the handoff's answer),
        so the conversation the next agent sees holds both."""
        moved = self.with_writes(run, handed, command)
        return Command(update=self.handed_back(moved.update or {}), goto=moved.goto)

    def __call__(self, state: OverAllState, config: RunnableConfig) -> Any:
        try:
            return super().__call__(self._seen(state), config)
        except GraphRecursionError as error:
            self.agent.running.raise_limit_error(error, config)

    async def acall(self, state: OverAllState, config: RunnableConfig) -> Any:
        try:
            return await super().acall(self._seen(state), config)
        except GraphRecursionError as error:
            self.agent.running.raise_limit_error(error, config)


__all__ = [
    "ACTIVE_AGENT",
    "ACTIVE_AGENTS",
    "NAME",
    "RESULTS",
    "STRUCTURED",
    "Shape",
    "SubAgentNode",
    "conversation",
    "final_answer",
]
