"""The graph engine: build a ``StateGraph``, compile it, run it over an ``OverAllState``."""

from __future__ import annotations

from .._runtime.run_loop import run_coroutine_sync
from ._constants import END, START
from ._subgraph import SubgraphNode
from .compiled import CompiledGraph, RunOutcome
from .config import RunnableConfig
from .interrupt import interrupt
from .retry import RetryPolicy
from .state import KeyStrategy, KeyStrategyLike, OverAllState, Overwrite, Updates
from .state_graph import DEFAULT_RECURSION_LIMIT, StateGraph
from .types import Command, Interrupt, NodeOutput, Send, StateSnapshot

__all__ = [
    "DEFAULT_RECURSION_LIMIT",
    "END",
    "START",
    "Command",
    "CompiledGraph",
    "Interrupt",
    "KeyStrategy",
    "KeyStrategyLike",
    "NodeOutput",
    "OverAllState",
    "Overwrite",
    "RetryPolicy",
    "RunOutcome",
    "RunnableConfig",
    "Send",
    "StateGraph",
    "StateSnapshot",
    "SubgraphNode",
    "Updates",
    "interrupt",
    "run_coroutine_sync",
]
