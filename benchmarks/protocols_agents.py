"""W18's second served agent (benchmarks/protocols.py): W15's ``bench`` whose answer streams
in many pieces, so a stream's cost per event is measured apart from its cost per run.

    graph-agent serve serving_agents:agent protocols_agents:agent --saver memory

- ``agent`` ("bench_chunks"): W2's agent with ``K = 2`` tool calls, its final answer
  ``ANSWER`` (``WORDS`` words) streamed word by word, as a provider streams tokens; it
  answers the same whole text when it is not streamed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

from _react import ScriptedModel, echo

from graph_agent import AssistantMessage, ChatResponse, Prompt, ReactAgent

__all__ = ["ANSWER", "WORDS", "agent"]

K, WORDS = 2, 400  # many: what a run pays once is small beside its events
ANSWER = " ".join(["final", "answer", "after", "2", "tool", "calls:"]
                  + [f"w{i}" for i in range(WORDS - 6)])  # fmt: skip


class ChunkedModel(ScriptedModel):
    """``ScriptedModel``'s tool calls, then ``ANSWER``, streamed a word a chunk."""

    def call(self, prompt: Prompt) -> ChatResponse:
        response = super().call(prompt)
        if response.result.output.tool_calls:
            return response
        return ChatResponse.of(AssistantMessage(ANSWER), "stop")

    def _pieces(self, prompt: Prompt) -> Iterator[ChatResponse]:
        response = self.call(prompt)
        if response.result.output.tool_calls:
            yield response
            return
        words = ANSWER.split(" ")
        for i, word in enumerate(words):
            yield ChatResponse.of(AssistantMessage(word if i == len(words) - 1 else word + " "))
        yield ChatResponse.of(AssistantMessage(""), "stop")

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        yield from self._pieces(prompt)

    async def astream(self, prompt: Prompt) -> AsyncIterator[ChatResponse]:
        for piece in self._pieces(prompt):
            await asyncio.sleep(0)  # a chunk at a time, as from a socket
            yield piece


agent = ReactAgent(name="bench_chunks", model=ChunkedModel(K), tools=[echo], max_iterations=10_000)
