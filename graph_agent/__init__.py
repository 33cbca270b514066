"""graph-agent: LLM agents that compile into a checkpointed state-machine graph.

Public names load lazily, so ``import graph_agent`` stays cheap and free of import cycles.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # graph engine
    "StateGraph": "graph_agent.graph",
    "CompiledGraph": "graph_agent.graph",
    "OverAllState": "graph_agent.graph",
    "KeyStrategy": "graph_agent.graph",
    "Overwrite": "graph_agent.graph",
    "RunnableConfig": "graph_agent.graph",
    "NodeOutput": "graph_agent.graph",
    "StateSnapshot": "graph_agent.graph",
    "Interrupt": "graph_agent.graph",
    "Command": "graph_agent.graph",
    "interrupt": "graph_agent.graph",
    "START": "graph_agent.graph",
    "END": "graph_agent.graph",
    # errors
    "GraphAgentError": "graph_agent.errors",
    "GraphValidationError": "graph_agent.errors",
    "InvalidUpdateError": "graph_agent.errors",
    "InvalidRouteError": "graph_agent.errors",
    "GraphRecursionError": "graph_agent.errors",
    "GraphResumeError": "graph_agent.errors",
    "GraphUsageError": "graph_agent.errors",
}

__all__ = [
    "END",
    "START",
    "Command",
    "CompiledGraph",
    "GraphAgentError",
    "GraphRecursionError",
    "GraphResumeError",
    "GraphUsageError",
    "GraphValidationError",
    "Interrupt",
    "InvalidRouteError",
    "InvalidUpdateError",
    "KeyStrategy",
    "NodeOutput",
    "OverAllState",
    "Overwrite",
    "RunnableConfig",
    "StateGraph",
    "StateSnapshot",
    "__version__",
    "interrupt",
]

if TYPE_CHECKING:
    from .errors import (
        GraphAgentError,
        GraphRecursionError,
        GraphResumeError,
        GraphUsageError,
        GraphValidationError,
        InvalidRouteError,
        InvalidUpdateError,
    )
    from .graph import (
        END,
        START,
        Command,
        CompiledGraph,
        Interrupt,
        KeyStrategy,
        NodeOutput,
        OverAllState,
        Overwrite,
        RunnableConfig,
        StateGraph,
        StateSnapshot,
        interrupt,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'graph_agent' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
