"""What an agent is made of, as plain data: its state keys and its parts (model, tools,
prompt, interceptors, state strategies). ``_build`` assembles the parts, ``_graph`` hands each
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

MESSAGES = "messages"
JUMP_TO = "jump_to"
REJECTED = "rejected_tool_calls"
OFFERED = "offered_tools"  # state key: the tools the model was offered for its tool calls
PRIVATE_KEYS = (JUMP_TO, OFFERED, REJECTED)  # the agent's bookkeeping, kept from callers


@dataclasses.dataclass(frozen=True)
class AgentParts:
    """The fixed pieces of one agent."""

    name: str
    model: ChatModel
    system_text: str | None
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
