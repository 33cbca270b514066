"""W16's served agent (benchmarks/workers.py): a ``ReactAgent`` whose model is a
``FunctionChatModel`` with an async function that awaits 50 ms (``$BENCH_W16_MODEL_S``) and
answers in one turn, with no tool call: one model step per run, so a run's wall time is the
50 ms wait plus what the framework (and the runs service around it) adds.

    graph-agent serve workers_agents:agent --queue redis://...
    graph-agent worker workers_agents:agent --queue redis://...

(with ``benchmarks/`` on ``PYTHONPATH``). Served under the name ``w16``; built without a
saver: the server and the workers give it theirs.
"""

from __future__ import annotations

import asyncio
import os

from graph_agent import AssistantMessage, FunctionChatModel, ReactAgent
from graph_agent.models import Prompt

__all__ = ["ANSWER", "MODEL_S", "agent"]

MODEL_S = float(os.environ.get("BENCH_W16_MODEL_S", "0.05"))
ANSWER = "done"


async def reply(prompt: Prompt) -> AssistantMessage:
    await asyncio.sleep(MODEL_S)
    return AssistantMessage(ANSWER)


agent = ReactAgent(name="w16", model=FunctionChatModel(reply), tools=[], max_iterations=10_000)
