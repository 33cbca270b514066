"""W15's served agents, ours (benchmarks/serving.py; LangGraph's: benchmarks/peer_serving_graphs.py).

    graph-agent serve serving_agents:agent serving_agents:agent_hold --saver memory

(with ``benchmarks/`` on ``PYTHONPATH``). Both are W2's agent: a ``ReactAgent`` with W2's
scripted model (benchmarks/_react.py, no LLM) and the ``echo`` tool.

- ``agent`` ("bench"): ``K = 2`` tool calls, then the answer (5 steps: model, tool, model, tool,
  model), W2's synchronous ``echo``. The per-run measurements.
- ``agent_hold`` ("bench_hold"): ``K = 1``, its ``echo`` async and holding
  ``$BENCH_W15_HOLD_S`` seconds (``asyncio.sleep``, default 4) before it answers, so that
  1,000 streams opened at once are all open at the same time.

They are built without a saver: the server gives them its ``--saver`` (``memory``, as
``langgraph dev``'s in-memory runtime); in-process runs give them a ``MemorySaver``.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from _react import ScriptedModel, echo

from graph_agent import ReactAgent, tool

__all__ = ["HOLD_S", "K_HOLD", "K", "agent", "agent_hold", "make_agent"]

K, K_HOLD = 2, 1
HOLD_S = float(os.environ.get("BENCH_W15_HOLD_S", "4"))


@tool(name="echo")
async def echo_hold(x: int) -> str:
    """Echo the integer back, after a while."""
    await asyncio.sleep(HOLD_S)
    return f"ok {x}"


def make_agent(hold: bool = False, saver: Any = None) -> ReactAgent:
    return ReactAgent(
        name="bench_hold" if hold else "bench",
        model=ScriptedModel(K_HOLD if hold else K),
        tools=[echo_hold if hold else echo],
        saver=saver,
        max_iterations=10_000,
    )


agent = make_agent()
agent_hold = make_agent(hold=True)
