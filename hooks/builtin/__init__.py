"""Built-in hooks and interceptors: call limits, a message window, summarization, human
approval of tool calls, retries and fallbacks for model and tool calls, and memories
written in the background after each turn."""

from __future__ import annotations

from .context_editing import ContextEditingInterceptor
from .errors import (
    CallLimitExceededError,
    ModelCallLimitExceededError,
    ToolCallLimitExceededError,
    ToolFeedbackError,
)
from .human import HumanInTheLoopHook, ToolFeedback
from .limits import ModelCallLimitHook, ToolCallLimitHook
from .memory_writer import MemoryChange, MemoryWriterHook, MemoryWriterStats
from .pii import PIIDetectionError, PIIHook, PIIMatch
from .retry import (
    ModelFallbackInterceptor,
    ModelRetryInterceptor,
    ToolRetryInterceptor,
    exponential_backoff,
)
from .summarization import SummarizationHook, approximate_tokens
from .window import MessageWindowHook, message_window

__all__ = [
    "CallLimitExceededError",
    "ContextEditingInterceptor",
    "HumanInTheLoopHook",
    "MemoryChange",
    "MemoryWriterHook",
    "MemoryWriterStats",
    "MessageWindowHook",
    "ModelCallLimitExceededError",
    "ModelCallLimitHook",
    "ModelFallbackInterceptor",
    "ModelRetryInterceptor",
    "PIIDetectionError",
    "PIIHook",
    "PIIMatch",
    "SummarizationHook",
    "ToolCallLimitExceededError",
    "ToolCallLimitHook",
    "ToolFeedback",
    "ToolFeedbackError",
    "ToolRetryInterceptor",
    "approximate_tokens",
    "exponential_backoff",
    "message_window",
]
