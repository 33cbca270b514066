"""The chat model interface every model implements."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Protocol, runtime_checkable

from ..errors import ModelError
from .types import ChatResponse, Prompt

__all__ = ["ChatModel", "acall_model", "call_model"]


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


def _stopped(model: ChatModel) -> ModelError:
    return ModelError(
        f"{type(model).__name__}.call raised StopIteration instead of returning a ChatResponse "
        "(did an iterator it reads, e.g. a list of scripted answers, run out?)"
    )


def call_model(model: ChatModel, prompt: Prompt) -> ChatResponse:
    """``model.call(prompt)``; a ``StopIteration`` escaping the model becomes a ``ModelError``
    (in the generator-driven loops that call models it would otherwise end the loop as if
    it had finished, or turn into a bare ``RuntimeError``)."""
    try:
        return model.call(prompt)
    except StopIteration as error:
        raise _stopped(model) from error
    except RuntimeError as error:  # "generator raised StopIteration" (PEP 479)
        if isinstance(error.__cause__, StopIteration):
            raise _stopped(model) from error
        raise


async def acall_model(model: ChatModel, prompt: Prompt) -> ChatResponse:
    """The async twin of ``call_model``."""
    try:
        return await model.acall(prompt)
    except RuntimeError as error:  # "coroutine raised StopIteration" (PEP 479)
        if isinstance(error.__cause__, StopIteration):
            raise _stopped(model) from error
        raise
