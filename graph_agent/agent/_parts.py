"""What an agent is made of, as plain data: its parts (model, tools, prompt, interceptors,
state strategies; its state keys are ``_keys``). ``_build`` assembles the parts, ``_graph`` hands each
node the pieces it needs; nothing here runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..graph import KeyStrategyLike
from ..models import ChatModel
from ..tools import ToolCallback, ToolCallingManager, ToolProvider

if TYPE_CHECKING:
    from hooks import ModelInterceptor

    from ._output import OutputSpec
    from ._prompt import PromptTemplate


@dataclasses.dataclass(frozen=True)
class AgentParts:
    """The fixed pieces of one agent."""

    name: str
    model: ChatModel
    system: str | PromptTemplate | None  # the system prompt: fixed, or filled per model call
    tools: tuple[ToolCallback, ...]
    tool_providers: tuple[ToolProvider, ...]
    manager: ToolCallingManager
    model_interceptors: tuple[ModelInterceptor, ...]
    tool_context: Mapping[str, Any]
    store: Any
    output_key: str | None
    strategies: Mapping[str, KeyStrategyLike]
    # Tools model interceptors declare they may add (``ModelInterceptor.tools``), by name.
    interceptor_tools: Mapping[str, ToolCallback] = dataclasses.field(default_factory=dict)
    # The agent's handoff tools: tool name -> the agent it hands the conversation to.
    handoffs: Mapping[str, str] = dataclasses.field(default_factory=dict)
    output: OutputSpec | None = None  # the output_type, when there is one
