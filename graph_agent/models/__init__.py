"""Chat models: the ``ChatModel`` protocol, prompts and responses, and the models we ship."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import ChatModel
from .scripted import FunctionChatModel, ScriptedChatModel
from .types import (
    ChatOptions,
    ChatResponse,
    ChatResponseMetadata,
    Generation,
    Prompt,
    ToolCallingChatOptions,
    Usage,
)

if TYPE_CHECKING:
    from .openai import OpenAIChatModel

__all__ = [
    "ChatModel",
    "ChatOptions",
    "ChatResponse",
    "ChatResponseMetadata",
    "FunctionChatModel",
    "Generation",
    "OpenAIChatModel",
    "Prompt",
    "ScriptedChatModel",
    "ToolCallingChatOptions",
    "Usage",
]


def __getattr__(name: str) -> Any:  # httpx is imported only when the OpenAI model is used
    if name == "OpenAIChatModel":
        from .openai import OpenAIChatModel

        return OpenAIChatModel
    raise AttributeError(f"module 'graph_agent.models' has no attribute {name!r}")
