"""What a turn keeps while it waits on its tool: the objects the garbage collector tracks.

Thousands of conversations at once on one loop (W12) wait on their tools most of the time.
Python's full collections walk every tracked object, and one runs each time the heap of
long-lived objects has grown by about a quarter: the objects each waiting turn keeps decide how
many full collections such a load pays (at 5,000 turns: 65 per turn gives 4, about 70 gives 5
and a third more time in the collector). W12 reports this count (``run.py --only W12``), and
``tests/agent/test_waiting_turns.py`` holds it to a generous bound.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time

from checkpoint import MemorySaver
from graph_agent import (
    AssistantMessage,
    FunctionChatModel,
    Prompt,
    ReactAgent,
    RunnableConfig,
    ToolCall,
    ToolCallback,
    ToolResponseMessage,
    UserMessage,
    tool,
)
from graph_agent._runtime import workers

TURNS = 1000


def _one_call_then_answer(prompt: Prompt) -> AssistantMessage | str:
    """Asks for ``wait`` once per turn, then answers."""
    if isinstance(prompt.messages[-1], ToolResponseMessage):
        return "done"
    return AssistantMessage("", tool_calls=(ToolCall(id="call_0", name="wait", arguments="{}"),))


def tracked_per_waiting_turn(tool_is_async: bool, turns: int = TURNS) -> float:
    """Objects the collector tracks per turn while ``turns`` turns wait on their tool."""
    started = [0]
    async_gate: asyncio.Event | None = None
    thread_gate = threading.Event()

    chosen: ToolCallback
    if tool_is_async:

        @tool(name="wait")
        async def wait_async() -> str:
            """Wait for the gate."""
            started[0] += 1
            assert async_gate is not None
            await async_gate.wait()
            return "ok"

        chosen = wait_async
    else:

        @tool(name="wait")
        def wait_sync() -> str:
            """Wait for the gate (in one of graph-agent's worker threads)."""
            started[0] += 1
            thread_gate.wait(30)
            return "ok"

        chosen = wait_sync

    model = FunctionChatModel(_one_call_then_answer)
    agent = (
        ReactAgent.builder().name("waiting").model(model).tools(chosen).saver(MemorySaver()).build()
    )

    def everyone_waits() -> bool:
        if tool_is_async:
            return started[0] == turns
        # as many calls as there are free worker threads run, the others wait in the queue
        return started[0] > 0 and started[0] + workers._workers._jobs.qsize() == turns

    async def wait_all() -> float:
        nonlocal async_gate
        async_gate = asyncio.Event()
        async_gate.set()
        thread_gate.set()
        await agent.ainvoke("warm", RunnableConfig(thread_id="warm"))
        async_gate.clear()
        thread_gate.clear()
        started[0] = 0
        gc.collect()
        before = len(gc.get_objects())
        running = asyncio.gather(
            *(
                agent.ainvoke({"messages": [UserMessage("go")]}, RunnableConfig(thread_id=f"t{i}"))
                for i in range(turns)
            )
        )
        try:
            deadline = time.monotonic() + 30
            while not everyone_waits():
                assert time.monotonic() < deadline, f"{started[0]} of {turns} turns waited"
                await asyncio.sleep(0.001)
            model.prompts.clear()  # the model's record of prompts is not what a turn keeps
            gc.collect()
            per_turn = (len(gc.get_objects()) - before) / turns
        finally:  # the shared worker threads are never left blocked for later tests
            async_gate.set()
            thread_gate.set()
        outs = await running
        assert all(out["messages"][-1].text == "done" for out in outs)
        return per_turn

    return asyncio.run(wait_all())
