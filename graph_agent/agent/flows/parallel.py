"""``ParallelAgent``: sub-agents at the same time, each on the flow's input alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...graph import END, START, StateGraph
from .._subagent import Shape
from ._base import FlowAgent, FlowAgentBuilder
from ._options import FlowOptions

__all__ = ["MERGE_STRATEGIES", "ParallelAgent"]


def _as_dict(results: dict[str, Any]) -> Any:
    return results


def _as_list(results: dict[str, Any]) -> Any:
    return list(results.values())


def _as_text(results: dict[str, Any]) -> Any:
    return "\n\n".join(str(v) for v in results.values() if v is not None)


MERGE_STRATEGIES: dict[str, Callable[[dict[str, Any]], Any]] = {
    "dict": _as_dict,
    "list": _as_list,
    "concat": _as_text,
}


class ParallelAgent(FlowAgent):
    """Runs its sub-agents at the same time (in one step: parallel threads in a sync run,
    tasks in an async one). Each sees the flow's input and state as they were before the
    step, never another's prompt or answer. Their answers join the conversation as one
    message (in the order given), and the flow's ``output_key`` gets their results merged
    by ``merge_strategy``: ``"dict"`` (default: ``{agent name: result}``), ``"list"``,
    ``"concat"`` (texts joined by blank lines) or a function of that dict. A result is what
    the sub-agent wrote to its ``output_key``, else its answer's text.

    ``max_concurrency`` runs them in waves of at most that many, in the order given.
    """

    kind = "parallel"
    _own_nodes = (*FlowAgent._own_nodes, "merge")

    @staticmethod
    def builder() -> FlowAgentBuilder[ParallelAgent]:
        """``.name().sub_agents(...).merge_strategy(...).max_concurrency(n)`` (+ saver, ...)."""
        return FlowAgentBuilder(ParallelAgent)

    def _configure(self, options: FlowOptions, problems: list[str]) -> None:
        strategy = options.merge_strategy
        if isinstance(strategy, str) and strategy in MERGE_STRATEGIES:
            self.merge: Callable[[dict[str, Any]], Any] = MERGE_STRATEGIES[strategy]
        elif callable(strategy):
            self.merge = strategy
        else:
            self.merge = _as_dict
            problems.append(
                f"merge_strategy {strategy!r} is not one of {sorted(MERGE_STRATEGIES)} or a "
                "function of the results (a dict by agent name)"
            )
        self.merge_strategy = strategy
        count = options.max_concurrency
        if count is not None and (
            isinstance(count, bool) or not isinstance(count, int) or count < 1
        ):
            problems.append(f"max_concurrency must be a positive int or None, got {count!r}")
            count = None
        self.max_concurrency: int | None = count

    def _build(self, graph: StateGraph) -> int:
        agents = list(self.sub_agents)
        size = self.max_concurrency or len(agents) or 1
        waves = [agents[i : i + size] for i in range(0, len(agents), size)]
        graph.add_node("merge", self._merge_node(agents, self.merge))
        previous = [START]
        for wave in waves:
            for agent in wave:
                graph.add_node(agent.name, self._node(agent, Shape.RESULT))
                graph.add_edge(previous, agent.name)
            previous = [a.name for a in wave]
        graph.add_edge(previous, "merge")
        graph.add_edge("merge", END)
        return len(waves) + 2
