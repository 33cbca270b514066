"""Shared by the agent tests: every behaviour runs through the sync and the async API."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from graph_agent import AssistantMessage, NodeOutput, OverAllState, ReactAgent, ToolCall


def tool_calls(*calls: tuple[str, dict[str, Any]], text: str = "") -> AssistantMessage:
    """An assistant message calling ``(name, arguments)`` pairs, with ids c1, c2, ..."""
    return AssistantMessage(
        text,
        tool_calls=[
            ToolCall(id=f"c{i}", name=name, arguments=json.dumps(args))
            for i, (name, args) in enumerate(calls, start=1)
        ],
    )


class Runner:
    """The agent's run APIs, sync or async (``asyncio.run`` of the a-method)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.is_async = mode == "async"

    def __repr__(self) -> str:
        return self.mode

    def call(self, agent: ReactAgent, value: Any, config: Any = None) -> AssistantMessage:
        if self.is_async:
            return asyncio.run(agent.acall(value, config))
        return agent.call(value, config)

    def invoke(self, agent: ReactAgent, value: Any, config: Any = None) -> OverAllState:
        if self.is_async:
            return asyncio.run(agent.ainvoke(value, config))
        return agent.invoke(value, config)

    def stream(self, agent: ReactAgent, value: Any, config: Any = None) -> list[NodeOutput]:
        if self.is_async:

            async def collect() -> list[NodeOutput]:
                return [output async for output in agent.astream(value, config)]

            return asyncio.run(collect())
        return list(agent.stream(value, config))

    def stream_messages(self, agent: ReactAgent, value: Any, config: Any = None) -> list[str]:
        if self.is_async:

            async def collect() -> list[str]:
                return [text async for text in agent.astream_messages(value, config)]

            return asyncio.run(collect())
        return list(agent.stream_messages(value, config))


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Runner:
    return Runner(request.param)
