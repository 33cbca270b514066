"""The chat model interface every model implements."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Protocol, runtime_checkable

from .types import ChatResponse, Prompt

__all__ = ["ChatModel"]


@runtime_checkable
class ChatModel(Protocol):
    """A chat model: ``call`` returns a whole response, ``stream`` yields chunks that
    ``ChatResponse.merge`` folds into one; ``acall`` and ``astream`` are the async twins.

    A failure raises (``ModelError`` for provider errors); it never becomes answer text.
    """

    def call(self, prompt: Prompt) -> ChatResponse: ...

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]: ...

    async def acall(self, prompt: Prompt) -> ChatResponse: ...

    def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]: ...
