"""Flows of agents: ``SequentialAgent``, ``ParallelAgent``, ``LoopAgent``,
``LlmRoutingAgent`` and ``SupervisorAgent``, each compiling to one graph whose sub-agents
are subgraphs; a flow is a sub-agent like any other, so flows nest."""

from __future__ import annotations

from ._base import FlowAgent, FlowAgentBuilder
from .loop import LoopAgent
from .parallel import ParallelAgent
from .routing import LlmRoutingAgent
from .sequential import SequentialAgent
from .supervisor import SupervisorAgent

__all__ = [
    "FlowAgent",
    "FlowAgentBuilder",
    "LlmRoutingAgent",
    "LoopAgent",
    "ParallelAgent",
    "SequentialAgent",
    "SupervisorAgent",
]
