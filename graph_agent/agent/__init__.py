"""Agents: ``ReactAgent`` (tools in a loop around a model, with hooks) and the flows that
compose agents (``SequentialAgent``, ``ParallelAgent``, ``LoopAgent``, ``LlmRoutingAgent``,
``SupervisorAgent``), all on the graph engine; ``agent.as_tool()`` and ``.handoffs(...)``."""

from __future__ import annotations

from ._as_tool import AgentTool
from ._handoff import HandoffTool
from .base import WITHDRAWN, BaseAgent, RunningAgent
from .builder import ReactAgentBuilder
from .flows import (
    FlowAgent,
    FlowAgentBuilder,
    LlmRoutingAgent,
    LoopAgent,
    ParallelAgent,
    SequentialAgent,
    SupervisorAgent,
)
from .react import ReactAgent

__all__ = [
    "WITHDRAWN",
    "AgentTool",
    "BaseAgent",
    "FlowAgent",
    "FlowAgentBuilder",
    "HandoffTool",
    "LlmRoutingAgent",
    "LoopAgent",
    "ParallelAgent",
    "ReactAgent",
    "ReactAgentBuilder",
    "RunningAgent",
    "SequentialAgent",
    "SupervisorAgent",
]
