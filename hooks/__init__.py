"""Agent hooks and interceptors: run code before/after the agent and the model, and wrap
model and tool calls.

Importing ``hooks`` loads the parts of ``graph_agent`` it builds on; ``graph_agent`` itself
does not import ``hooks`` until an agent is built.
"""

from __future__ import annotations

from .base import AgentHook, Hook, HookPosition, HookResult, JumpTo, ModelHook
from .interceptors import (
    ModelCallHandler,
    ModelInterceptor,
    ModelRequest,
    ToolCallHandler,
    ToolCallRequest,
    ToolInterceptor,
)

__all__ = [
    "AgentHook",
    "Hook",
    "HookPosition",
    "HookResult",
    "JumpTo",
    "ModelCallHandler",
    "ModelHook",
    "ModelInterceptor",
    "ModelRequest",
    "ToolCallHandler",
    "ToolCallRequest",
    "ToolInterceptor",
]
