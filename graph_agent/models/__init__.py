"""Chat models: the ``ChatModel`` protocol, prompts and responses, and the models we ship;
``OpenAIEmbeddings``, the embeddings of an OpenAI-compatible API."""

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
    from .embeddings import OpenAIEmbeddings
    from .openai import OpenAIChatModel

__all__ = [
    "ChatModel",
    "ChatOptions",
    "ChatResponse",
    "ChatResponseMetadata",
    "FunctionChatModel",
    "Generation",
    "OpenAIChatModel",
    "OpenAIEmbeddings",
    "Prompt",
    "ScriptedChatModel",
    "ToolCallingChatOptions",
    "Usage",
]


def __getattr__(name: str) -> Any:  # httpx is imported only when an OpenAI client is used
    if name == "OpenAIChatModel":
        from .openai import OpenAIChatModel

        return OpenAIChatModel
    if name == "OpenAIEmbeddings":
        from .embeddings import OpenAIEmbeddings

        return OpenAIEmbeddings
    raise AttributeError(f"module 'graph_agent.models' has no attribute {name!r}")
