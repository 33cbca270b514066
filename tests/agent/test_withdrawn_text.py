"""A model call that fails after streaming some text, then is retried: the failed attempt's
text is marked as withdrawn, never glued to the retry's ("The answer The answer is 42.")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from graph_agent import AssistantMessage, ChatResponse, ModelError, Prompt, ReactAgent
from graph_agent.agent import WITHDRAWN
from graph_agent.events import ModelEnd
from hooks import ModelRetryInterceptor


class BreaksOnce:
    """Streams "The answer " and then breaks off; the second call streams the whole answer."""

    def __init__(self) -> None:
        self.calls = 0

    def _pieces(self) -> Iterator[ChatResponse]:
        self.calls += 1
        yield ChatResponse.of(AssistantMessage("The answer "))
        if self.calls == 1:
            raise ModelError("the stream broke off: ReadError")
        yield ChatResponse.of(AssistantMessage("is 42."), "stop")

    def call(self, prompt: Prompt) -> ChatResponse:
        return ChatResponse.merge(list(self._pieces()))

    async def acall(self, prompt: Prompt) -> ChatResponse:
        return self.call(prompt)

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        return self._pieces()

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        for piece in self._pieces():
            yield piece


def agent() -> ReactAgent:
    retry = ModelRetryInterceptor(max_attempts=2, sleep=lambda seconds: None)
    return ReactAgent(name="a", model=BreaksOnce(), interceptors=[retry])


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_stream_messages_marks_a_failed_attempts_text(asynchronous: bool) -> None:
    bot = agent()
    if asynchronous:

        async def read() -> list[str]:
            return [piece async for piece in bot.astream_messages("question?")]

        pieces = asyncio.run(read())
    else:
        pieces = list(bot.stream_messages("question?"))
    assert pieces == ["The answer ", WITHDRAWN, "The answer ", "is 42."]
    text = "".join(pieces)
    assert text.split(WITHDRAWN)[-1] == "The answer is 42."


def test_stream_events_say_which_model_call_failed() -> None:
    ends = [e for e in agent().stream_events("question?") if isinstance(e, ModelEnd)]
    assert [type(e.error).__name__ if e.error else None for e in ends] == ["ModelError", None]
    assert ends[0].message is None and ends[1].message.text == "The answer is 42."
