"""``LoopAgent``: its sub-agents in order, round after round."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from ...graph import END, START, OverAllState, StateGraph
from ._base import FlowAgent, FlowAgentBuilder
from ._options import FlowOptions

__all__ = ["LoopAgent"]

ROUND = "loop_round"  # private: the rounds this run of the loop has done


class LoopAgent(FlowAgent):
    """Runs its sub-agents in order (as ``SequentialAgent`` does), then again, for
    ``max_iterations`` rounds (default 10), or until ``until(state)`` is true after a round.
    Each round sees what earlier rounds wrote (a critic's ``output_key`` read by a writer's
    ``{feedback}``). The loop's answer, and its ``output_key``'s value, is its last
    sub-agent's latest."""

    kind = "loop"
    _own_nodes = (*FlowAgent._own_nodes, "round")

    @staticmethod
    def builder() -> FlowAgentBuilder[LoopAgent]:
        """``.name().sub_agents(...).max_iterations(n).until(predicate)`` (+ saver, ...)."""
        return FlowAgentBuilder(LoopAgent)

    def _configure(self, options: FlowOptions, problems: list[str]) -> None:
        self.max_iterations: int = self._count_option(options, problems, "max_iterations")
        until = options.until
        if until is not None and not callable(until):
            problems.append(f"until must be a function (state) -> bool, got {until!r}")
            until = None
        self.until: Callable[[OverAllState], bool] | None = until
        self._fresh = {ROUND: 0}

    def _private_keys(self) -> tuple[str, ...]:
        return (*super()._private_keys(), ROUND)

    def _build(self, graph: StateGraph) -> int:
        names = [a.name for a in self.sub_agents]
        for agent in self.sub_agents:
            graph.add_node(agent.name, self._node(agent, last=agent is self.sub_agents[-1]))
        graph.add_edge(START, names[0])
        for a, b in itertools.pairwise(names):
            graph.add_edge(a, b)
        limit, until = self.max_iterations, self.until

        def count_round(state: OverAllState) -> dict[str, Any]:
            return {ROUND: (state.get(ROUND) or 0) + 1}

        def next_round(state: OverAllState) -> str:
            if state.get(ROUND, 0) >= limit or (until is not None and until(state)):
                return "done"
            return "again"

        graph.add_node("round", count_round)
        graph.add_edge(names[-1], "round")
        graph.add_conditional_edges("round", next_round, {"again": names[0], "done": END})
        return (len(names) + 1) * limit + 1
