"""The router of tests/agent/test_flow_savers.py's cross-process test, and the process that
resumes it.

``build_router(saver, marks)`` makes an ``LlmRoutingAgent`` over three agents: ``weather``
(a ``forecast`` tool), ``news`` and ``payments``, whose ``refund`` tool needs a person's
approval (``HumanInTheLoopHook``) and appends this process's pid to the file ``marks`` when
it runs. Every model is a ``FunctionChatModel`` answering from its prompt alone, so a
process that did not see the start of a run answers the rest of it the same way.

Run as ``python -m tests.agent._router_worker MODE URL PREFIX THREAD MARKS`` from the
repository root: it resumes the paused thread ``THREAD`` of the router on the Redis server at
``URL`` (keys under ``PREFIX``) with ``Command(resume=ToolFeedback.approve())``, through
``call`` (MODE ``sync``) or ``acall`` (``async``), and prints ``{"answer": ..., "pid": ...}``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from checkpoint import BaseCheckpointSaver, RedisSaver
from graph_agent import (
    AssistantMessage,
    Command,
    LlmRoutingAgent,
    Prompt,
    ReactAgent,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent.models import FunctionChatModel
from hooks import HumanInTheLoopHook, ToolFeedback


def _last_user(prompt: Prompt) -> str:
    return [m for m in prompt.messages if isinstance(m, UserMessage)][-1].text


def _route(prompt: Prompt) -> str:
    request = _last_user(prompt)
    if "refund" in request:
        agent = "payments"
    elif "rain" in request:
        agent = "weather"
    else:
        agent = "news"
    return json.dumps({"agents": [{"agent": agent, "query": request}]})


def _tool_then_answer(tool_name: str, arguments: dict[str, Any], prefix: str) -> Any:
    """A model that calls ``tool_name`` for a request, then answers with its result."""

    def reply(prompt: Prompt) -> AssistantMessage:
        last = prompt.messages[-1]
        if isinstance(last, ToolResponseMessage):
            return AssistantMessage(f"{prefix}{last.responses[0].response_data}")
        call_id = f"{tool_name}-{len(prompt.messages)}"
        call = ToolCall(id=call_id, name=tool_name, arguments=json.dumps(arguments))
        return AssistantMessage("", tool_calls=[call])

    return reply


def build_router(saver: BaseCheckpointSaver, marks: Path) -> LlmRoutingAgent:
    @tool
    def forecast(city: str) -> str:
        """The weather forecast for a city."""
        return f"rain in {city}"

    @tool
    def refund(amount: int) -> str:
        """Refund an amount to the customer."""
        with marks.open("a") as file:
            file.write(f"{os.getpid()}\n")
        return f"refunded {amount}"

    weather = ReactAgent(
        name="weather",
        model=FunctionChatModel(_tool_then_answer("forecast", {"city": "Paris"}, "Forecast: ")),
        tools=[forecast],
        description="Weather forecasts",
    )
    news = ReactAgent(
        name="news",
        model=FunctionChatModel(lambda prompt: f"News about {_last_user(prompt)}"),
        description="The news",
    )
    payments = ReactAgent(
        name="payments",
        model=FunctionChatModel(_tool_then_answer("refund", {"amount": 5}, "Payments: ")),
        tools=[refund],
        description="Refunds",
        hooks=[HumanInTheLoopHook(["refund"])],
    )
    return LlmRoutingAgent(
        name="desk",
        model=FunctionChatModel(_route),
        sub_agents=[weather, news, payments],
        saver=saver,
    )


def main(mode: str, url: str, prefix: str, thread: str, marks: str) -> None:
    saver = RedisSaver.from_url(url, key_prefix=prefix)
    router = build_router(saver, Path(marks))
    config = {"thread_id": thread}
    approve = Command(resume=ToolFeedback.approve())
    if mode == "async":

        async def resume() -> AssistantMessage:
            try:
                return await router.acall(approve, config)
            finally:
                await saver.aclose()  # its async client belongs to this loop

        answer = asyncio.run(resume())
    else:
        try:
            answer = router.call(approve, config)
        finally:
            saver.close()
    print(json.dumps({"answer": answer.text, "pid": os.getpid()}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:6])
