"""``SupervisorAgent``: a model that delegates to its sub-agents, in turn, until it answers."""

from __future__ import annotations

from typing import NoReturn

from ...errors import GraphRecursionError
from ...graph import CompiledGraph
from .._agent_ref import ConfigLike
from ..react import ReactAgent
from ._base import FlowAgent, FlowAgentBuilder
from ._options import FlowOptions

__all__ = ["SupervisorAgent"]

PROMPT = """You supervise a team of agents and answer the user with their help.

Agents (each is a tool: call it with {{"input": "<the task>"}} and it answers you):
{agents}

Delegate each part of the work to the agent suited to it; call several at once when their \
tasks do not depend on each other. When you have what the user asked for, answer the user \
yourself."""


class SupervisorAgent(FlowAgent):
    """A model (the supervisor) that delegates: each sub-agent is one of its tools (named
    after the agent, described by its description), called with a task; the sub-agent runs
    (seeing the conversation without tool traffic, then its task) and its answer comes back
    as the tool's result. The supervisor delegates in turn, several sub-agents at once when
    it calls several tools in one answer (they run in parallel), until it answers the user.
    Every delegation is answered in its history, so each request is valid for any provider.

    It is a ``ReactAgent`` underneath (``agent.supervisor``): its graph, hooks and events
    are an agent's, and each sub-agent runs under the namespace of its call.
    ``max_iterations`` caps the supervisor's model calls in one run (default 10).
    """

    kind = "supervisor"
    _composed = False
    _shares_state = False  # its agents answer as tools: their output_keys never meet
    _own_nodes = ()  # its sub-agents are tools, not nodes

    @staticmethod
    def builder() -> FlowAgentBuilder[SupervisorAgent]:
        """``.name().model(m).sub_agents(...).instruction(...)`` (+ saver, listeners, ...)."""
        return FlowAgentBuilder(SupervisorAgent)

    def _configure(self, options: FlowOptions, problems: list[str]) -> None:
        self.model = self._model_option(options, problems, "supervisor")
        self.instruction: str | None = options.instruction
        self.max_iterations: int = self._count_option(options, problems, "max_iterations")
        self._check_descriptions(problems, "the supervisor's model")

    def _compile(self) -> CompiledGraph:
        listing = "\n".join(f"- {a.name}: {a.description}" for a in self.sub_agents)
        self.supervisor = ReactAgent(
            name=self.name,
            model=self.model,
            system_prompt=PROMPT.format(agents=listing),
            instruction=self.instruction,
            tools=[agent.as_tool(history=True) for agent in self.sub_agents],
            saver=self.saver,
            listeners=self._listeners,
            max_iterations=self.max_iterations,
            output_key=self.output_key,
        )
        self._fresh = self.supervisor.running.fresh
        graph = self.supervisor.graph
        # drawn inside the tool node that calls them
        graph.draw_inside("tools", [(a.name, a.graph) for a in self.sub_agents])
        return graph

    def _speaks(self, path: tuple[str, ...]) -> bool:
        """The supervisor answers; its sub-agents answer it, not the user."""
        return not path

    def _raise_limit_error(self, error: GraphRecursionError, config: ConfigLike) -> NoReturn:
        self.supervisor.running.raise_limit_error(error, config)
