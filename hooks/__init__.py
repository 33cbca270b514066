"""Agent hooks and interceptors: run code before/after the agent and the model, and wrap
model and tool calls.

Importing ``hooks`` loads the parts of ``graph_agent`` it builds on; ``graph_agent`` itself
does not import ``hooks`` until an agent is built.
"""

from __future__ import annotations

from .base import AgentHook, Hook, HookPosition, HookResult, JumpTo, ModelHook
from .builtin import (
    CallLimitExceededError,
    ContextEditingInterceptor,
    HumanInTheLoopHook,
    MemoryChange,
    MemoryWriterHook,
    MemoryWriterStats,
    MessageWindowHook,
    ModelCallLimitExceededError,
    ModelCallLimitHook,
    ModelFallbackInterceptor,
    ModelRetryInterceptor,
    PIIDetectionError,
    PIIHook,
    PIIMatch,
    SummarizationHook,
    ToolCallLimitExceededError,
    ToolCallLimitHook,
    ToolFeedback,
    ToolFeedbackError,
    ToolRetryInterceptor,
)
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
    "CallLimitExceededError",
    "ContextEditingInterceptor",
    "Hook",
    "HookPosition",
    "HookResult",
    "HumanInTheLoopHook",
    "JumpTo",
    "MemoryChange",
    "MemoryWriterHook",
    "MemoryWriterStats",
    "MessageWindowHook",
    "ModelCallHandler",
    "ModelCallLimitExceededError",
    "ModelCallLimitHook",
    "ModelFallbackInterceptor",
    "ModelHook",
    "ModelInterceptor",
    "ModelRequest",
    "ModelRetryInterceptor",
    "PIIDetectionError",
    "PIIHook",
    "PIIMatch",
    "SummarizationHook",
    "ToolCallHandler",
    "ToolCallLimitExceededError",
    "ToolCallLimitHook",
    "ToolCallRequest",
    "ToolFeedback",
    "ToolFeedbackError",
    "ToolInterceptor",
    "ToolRetryInterceptor",
]
