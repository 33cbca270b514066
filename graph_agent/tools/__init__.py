"""Tools: turn functions and methods into tools a model can call, and run its calls."""

from __future__ import annotations

from .callback import ToolCallback
from .context import ToolContext
from .convert import DefaultToolCallResultConverter, ToolCallResultConverter
from .definition import ToolDefinition, ToolMetadata
from .execution import (
    DefaultToolExecutionExceptionProcessor,
    ToolExecutionExceptionProcessor,
    UnknownToolStrategy,
)
from .function import FunctionToolCallback, ToolParam, tool
from .manager import (
    DefaultToolExecutionEligibilityPredicate,
    ToolCallingManager,
    ToolExecutionEligibilityPredicate,
    ToolExecutionResult,
)
from .method import MethodToolCallback, ToolCallbacks
from .request import ToolCallInterceptor, ToolCallRequest, ToolExecutionRecord
from .resolution import (
    DelegatingToolCallbackResolver,
    FunctionToolProvider,
    StaticToolCallbackProvider,
    StaticToolCallbackResolver,
    ToolCallbackProvider,
    ToolCallbackResolver,
    ToolProvider,
    ToolProviderRequest,
    as_tool_callbacks,
    tool_provider,
)

__all__ = [
    "DefaultToolCallResultConverter",
    "DefaultToolExecutionEligibilityPredicate",
    "DefaultToolExecutionExceptionProcessor",
    "DelegatingToolCallbackResolver",
    "FunctionToolCallback",
    "FunctionToolProvider",
    "MethodToolCallback",
    "StaticToolCallbackProvider",
    "StaticToolCallbackResolver",
    "ToolCallInterceptor",
    "ToolCallRequest",
    "ToolCallResultConverter",
    "ToolCallback",
    "ToolCallbackProvider",
    "ToolCallbackResolver",
    "ToolCallbacks",
    "ToolCallingManager",
    "ToolContext",
    "ToolDefinition",
    "ToolExecutionEligibilityPredicate",
    "ToolExecutionExceptionProcessor",
    "ToolExecutionRecord",
    "ToolExecutionResult",
    "ToolMetadata",
    "ToolParam",
    "ToolProvider",
    "ToolProviderRequest",
    "UnknownToolStrategy",
    "as_tool_callbacks",
    "tool",
    "tool_provider",
]
