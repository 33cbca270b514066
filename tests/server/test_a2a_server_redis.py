"""Two servers on one Redis answer for each other's A2A tasks: a task is a run kept in Redis
and its context a thread there, so neither keeps a task table of its own. A task paused on
the first is read, listed and answered on the second."""

from __future__ import annotations

import asyncio
import json
import uuid
from contextlib import ExitStack
from typing import Any

from checkpoint import RedisSaver
from graph_agent import (
    AssistantMessage,
    FunctionChatModel,
    Prompt,
    ReactAgent,
    ToolCall,
    UserMessage,
)
from graph_agent.runs import RedisRunStore
from graph_agent.server import create_app
from hooks import HumanInTheLoopHook
from tests._needs import need_module

from .conftest import live_server
from .served_kit import refund
from .test_a2a_server import a2a
from .test_two_servers import closing_on_its_loop

need_module("a2a.client", "the a2a extra: pip install 'graph-agent[a2a]' (make test)")

from a2a.client import Client  # noqa: E402
from a2a.helpers.proto_helpers import new_data_part  # noqa: E402
from a2a.types import (  # noqa: E402
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)


def refund_agent(saver: RedisSaver) -> ReactAgent:
    """Asks to refund 5 (a human approves it), then says it did, whichever server runs it."""

    def reply(prompt: Prompt) -> AssistantMessage:
        if isinstance(prompt.messages[-1], UserMessage):
            call = ToolCall(id="call_1", name="refund", arguments=json.dumps({"amount": 5}))
            return AssistantMessage("", tool_calls=[call])
        return AssistantMessage("Refunded 5.")

    return ReactAgent(
        name="refunds",
        model=FunctionChatModel(reply),
        tools=[refund],
        hooks=[HumanInTheLoopHook(["refund"])],
        saver=saver,
    )


def two_servers(stack: ExitStack, redis_url: str) -> list[str]:
    prefix = f"a2a-{uuid.uuid4().hex[:8]}"
    urls = []
    for _ in range(2):
        saver = RedisSaver.from_url(redis_url, key_prefix=prefix)
        store = RedisRunStore.from_url(redis_url, prefix=f"{prefix}:runs")
        app = create_app({"refunds": refund_agent(saver)}, runs=store)
        closing_on_its_loop(app, saver, store)
        urls.append(stack.enter_context(live_server(app)))
    return urls


async def send(client: Client, message: Message) -> Task:
    answers = [a async for a in client.send_message(SendMessageRequest(message=message))]
    return answers[-1].task


def test_a_task_paused_on_one_server_is_answered_on_the_other(redis_url: str) -> None:
    async def scenario(first: str, second: str) -> dict[str, Any]:
        async with a2a(first, "refunds") as one:
            asked = Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(text="refund")])
            paused = await send(one, asked)
        async with a2a(second, "refunds") as two:
            read = await two.get_task(GetTaskRequest(id=paused.id))
            listed = await two.list_tasks(ListTasksRequest(context_id=paused.context_id))
            answer = new_data_part({"tool_call_id": "call_1", "decision": "approved"})
            done = await send(
                two,
                Message(message_id="m2", role=Role.ROLE_USER, parts=[answer], task_id=paused.id),
            )
        async with a2a(first, "refunds") as one:
            again = await one.get_task(GetTaskRequest(id=paused.id))
        return {"paused": paused, "read": read, "listed": listed, "done": done, "again": again}

    with ExitStack() as stack:
        first, second = two_servers(stack, redis_url)
        seen = asyncio.run(scenario(first, second))
    paused, done = seen["paused"], seen["done"]
    assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert seen["read"].status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert [t.id for t in seen["listed"].tasks] == [paused.id]
    assert done.id == paused.id
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert done.artifacts[0].parts[0].text == "Refunded 5."
    assert seen["again"].status.state == TaskState.TASK_STATE_COMPLETED
