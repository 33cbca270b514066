"""A model's answer as effects, for logic written once (``checkpoint.effects``,
``graph_agent._runtime.streams``): the whole answer (``Answer``) or its chunks, pulled one
by one (``chunks``). The agent's model node, ``ChatClient`` and the fallback interceptor ask
their models through them."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from checkpoint.effects import Effect

from .._runtime.streams import Pull
from .base import ChatModel, acall_model, call_model
from .types import ChatResponse, Prompt

__all__ = ["Answer", "chunks"]


class Answer(Effect):
    """``model``'s whole answer to ``prompt``: ``call`` in a sync run, ``acall`` in an async
    one (a ``StopIteration`` escaping the model is a ``ModelError``: see ``call_model``)."""

    __slots__ = ("model", "prompt")

    def __init__(self, model: ChatModel, prompt: Prompt) -> None:
        self.model = model
        self.prompt = prompt

    def run(self, context: Any) -> ChatResponse:
        return call_model(self.model, self.prompt)

    def arun(self, context: Any) -> Awaitable[ChatResponse]:
        return acall_model(self.model, self.prompt)


def chunks(model: ChatModel, prompt: Prompt) -> Pull[ChatResponse]:
    """``model``'s answer to ``prompt`` as a stream of chunks (``stream`` in a sync run,
    ``astream`` in an async one), started on the first read; yield it for each chunk."""
    return Pull(lambda: model.stream(prompt), lambda: model.astream(prompt))
