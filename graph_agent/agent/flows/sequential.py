"""``SequentialAgent``: sub-agents one after another, each seeing what earlier ones wrote."""

from __future__ import annotations

from ...graph import END, START, StateGraph
from ._base import FlowAgent, FlowAgentBuilder

__all__ = ["SequentialAgent"]


class SequentialAgent(FlowAgent):
    """Runs its sub-agents in the order given. Each sees the conversation so far (the
    input, then each earlier sub-agent's answer) and the state keys earlier ones wrote
    (their ``output_key``), which its ``instruction`` may name (``{plan}``). The flow's
    answer is the last sub-agent's, and so is its ``output_key``'s value."""

    kind = "sequential"

    @staticmethod
    def builder() -> FlowAgentBuilder[SequentialAgent]:
        """``.name().description().sub_agents(...)`` (+ saver, listeners, output_key)."""
        return FlowAgentBuilder(SequentialAgent)

    def _build(self, graph: StateGraph) -> int:
        previous = START
        for agent in self.sub_agents:
            graph.add_node(agent.name, self._node(agent, last=agent is self.sub_agents[-1]))
            graph.add_edge(previous, agent.name)
            previous = agent.name
        graph.add_edge(previous, END)
        return len(self.sub_agents) + 1
