"""Handoffs: ``ReactAgent.builder().handoffs(billing, "triage")`` gives the agent one
``transfer_to_<name>`` tool per target, and makes its graph a swarm: one node per agent it
can reach by handoffs (a subgraph each), sharing one conversation.

- A handoff is a tool call, answered like any other ("Transferred to billing.") before
  control moves, so the conversation stays valid for every provider; tool calls beside it
  run and are answered too. Of several handoffs in one answer the first moves the
  conversation; the others are answered that they did not.
- The agent that took over is remembered per thread (``state["active_agent"]``): the next
  turn starts with it, until it hands the conversation on or back.
- The agents share the conversation whole (their tool calls and results included), so an
  agent that gets the conversation back sees everything it did before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import GraphUsageError
from ..graph import END, START, Command, CompiledGraph, KeyStrategy, OverAllState, StateGraph
from ..messages import ToolResponse, ToolResponseMessage
from ..tools import ToolDefinition, ToolMetadata
from ._keys import MESSAGES
from ._subagent import ACTIVE_AGENT, NAME, STRUCTURED, Shape, SubAgentNode
from ._unanswered import answer_unfinished_calls

if TYPE_CHECKING:
    from .base import BaseAgent

__all__ = [
    "ACTIVE_AGENT",
    "HandoffTool",
    "build_swarm",
    "handoff_command",
    "members",
    "tool_name_for",
]

PREFIX = "transfer_to_"
_EMPTY_SCHEMA = json.dumps({"type": "object", "properties": {}, "additionalProperties": False})


def tool_name_for(target: str) -> str:
    return f"{PREFIX}{target}"


def transferred(target: str) -> str:
    """The handoff tool's answer: only a call answered so (the tool ran: not rejected by a
    person, not refused by an interceptor) moves the conversation."""
    return f"Transferred to {target}."


class HandoffTool:
    """The ``transfer_to_<name>`` tool: calling it hands the conversation to ``target``
    (the agent's tool node does the moving; the call itself only answers)."""

    def __init__(self, target: str, description: str | None = None) -> None:
        self.target = target
        about = f": {description}" if description else ""
        self.tool_definition = ToolDefinition(
            tool_name_for(target),
            f"Hand the conversation over to the agent '{target}'{about}. It answers the user "
            "from then on, until it hands the conversation back.",
            _EMPTY_SCHEMA,
        )
        self.tool_metadata = ToolMetadata()

    def __repr__(self) -> str:
        return f"HandoffTool({self.target!r})"

    def call(self, tool_input: str, tool_context: Any = None) -> str:
        return transferred(self.target)

    async def acall(self, tool_input: str, tool_context: Any = None) -> str:
        return self.call(tool_input, tool_context)


def handoff_targets(handoffs: Iterable[Any]) -> list[tuple[str, BaseAgent | None]]:
    """(name, agent or None when given by name) of each target, in order."""
    found: list[tuple[str, BaseAgent | None]] = []
    for target in handoffs:
        if isinstance(target, str):
            found.append((target, None))
        else:  # not an agent (``check_handoffs`` says so): named by what it is
            found.append((str(getattr(target, "name", target)), target))
    return found


def check_handoffs(handoffs: Sequence[Any], own: str | None, problems: list[str]) -> None:
    from .base import BaseAgent

    for target in handoffs:
        name = target if isinstance(target, str) else getattr(target, "name", None)
        if not isinstance(target, (str, BaseAgent)):
            problems.append(f"handoffs: {target!r} is neither an agent nor an agent's name")
        elif not isinstance(name, str) or not NAME.match(name):
            problems.append(f"handoffs: {name!r} must be 1-64 letters, digits, '_' or '-'")
        elif name == own:
            problems.append(f"handoffs: agent '{own}' cannot hand off to itself")
        elif not NAME.match(tool_name_for(name)):
            problems.append(
                f"handoffs: the tool '{tool_name_for(name)}' for '{name}' would be longer than "
                f"the 64 characters providers accept: name the agent at most "
                f"{64 - len(PREFIX)} characters"
            )


def handoff_command(
    message_calls: Sequence[Any], response: ToolResponseMessage, targets: Mapping[str, str]
) -> tuple[ToolResponseMessage, str] | None:
    """When the batch holds handoffs that ran: the tool responses (later handoffs told they
    did not move the conversation) and the agent the first one hands it to; else ``None``
    (a handoff a person rejected, or that was not run, leaves the conversation where it is)."""
    answered = {r.id: r.response_data for r in response.responses}
    moving = [
        c
        for c in message_calls
        if c.name in targets and answered.get(c.id) == transferred(targets[c.name])
    ]
    if not moving:
        return None
    first = moving[0]
    target = targets[first.name]
    if len(moving) == 1:
        return response, target
    others = {c.id for c in moving[1:]}
    responses = tuple(
        ToolResponse(
            id=r.id,
            name=r.name,
            response_data=f"Not transferred: the conversation was handed to {target} by another call of "
            "the same answer (one handoff at a time).",
        )
        if r.id in others
        else r
        for r in response.responses
    )
    return ToolResponseMessage(responses=responses, metadata=response.metadata), target


def to_parent(update: dict[str, Any], target: str) -> Command:
    return Command(update={**update, ACTIVE_AGENT: target}, goto=target, graph=Command.PARENT)


def members(entry: BaseAgent, *, strict: bool = False) -> dict[str, BaseAgent]:
    """The agents reachable from ``entry`` by handoffs, by name; a target given by name is
    one of those given as agents somewhere in the swarm. ``strict`` (building the swarm):
    a name no agent of the swarm has is an error; else it is left out (a member seen on its
    own, as when an event filter looks for a name through the swarm, names agents that only
    its entry's swarm has)."""
    members: dict[str, BaseAgent] = {entry.name: entry}
    named: list[tuple[str, str]] = []  # (who, target name)
    todo = [entry]
    while todo:
        agent = todo.pop()
        for name, target in handoff_targets(getattr(agent, "handoffs", ())):
            if target is None:
                named.append((agent.name, name))
            elif name not in members:
                members[name] = target
                todo.append(target)
            elif members[name] is not target:
                raise GraphUsageError(
                    f"handoffs: two different agents are named '{name}' in the swarm of "
                    f"'{entry.name}'; names must be unique"
                )
    for who, name in named:
        if strict and name not in members:
            raise GraphUsageError(
                f"agent '{who}' hands off to '{name}', but no agent of that name is in the swarm "
                f"of '{entry.name}' (its agents: {', '.join(sorted(members))}); pass the agent "
                "itself to .handoffs(...) on one of them"
            )
    return members


def build_swarm(entry: BaseAgent) -> CompiledGraph:
    """``entry``'s graph when it has handoffs: one node per agent of its swarm (each its own
    loop, as a subgraph handing back every message it added), a start that goes to the
    thread's active agent (``entry`` on a new thread), and each agent's answer ends the turn."""
    members_ = members(entry, strict=True)
    strategies: dict[str, Any] = {MESSAGES: KeyStrategy.APPEND}
    for agent in members_.values():
        loop = agent.running.loop
        for key, strategy in loop.key_strategies.items():
            if key not in loop.private_keys and key not in strategies:
                strategies[key] = strategy
    # the members' bookkeeping (a turn's input clears their jump) stays out of sight
    private = {key for agent in members_.values() for key in agent.running.loop.private_keys}
    graph = StateGraph(strategies, private_keys=private)
    names = list(members_)
    for name, agent in members_.items():
        running = agent.running
        node = SubAgentNode(
            agent, Shape.HISTORY, graph=running.loop, structured=STRUCTURED in strategies
        )
        if agent is not entry:  # a member with handoffs keeps its listeners off its loop
            node.listeners = running.listeners
        # where its handoffs may lead (what compile() checks and the drawing shows)
        targets = [t for t, _ in handoff_targets(getattr(agent, "handoffs", ())) if t in members_]
        graph.add_node(name, node, destinations=targets)
        graph.add_edge(name, END)

    def active(state: OverAllState) -> str:
        current = state.get(ACTIVE_AGENT)
        return current if current in members_ else entry.name

    graph.add_conditional_edges(START, active, names)
    return graph.compile(
        saver=entry.saver,
        recursion_limit=4 * len(names) + 4,
        listeners=entry.running.listeners,
        name=entry.name,
        before_input=answer_unfinished_calls,
        agent=True,
    )
