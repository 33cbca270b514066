"""W15's served graphs, LangGraph's side (benchmarks/peer_serving.py; ours:
benchmarks/serving_agents.py). The generated ``langgraph.json`` names them for ``langgraph dev``:

- ``graph`` ("bench"): W2's LangGraph agent (benchmarks/peer_langgraph.py: ``create_react_agent``
  with the scripted ``BaseChatModel`` and the ``@tool`` ``echo``), ``K = 2``.
- ``graph_hold`` ("bench_hold"): ``K = 1``, its ``echo`` async and holding ``$BENCH_W15_HOLD_S``
  seconds (``asyncio.sleep``, default 4).

Compiled without a checkpointer: the server brings its own (in memory); in-process runs use
``make_graph(..., checkpointer=InMemorySaver())``.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from _peer_kit import make_model, make_tool
from langgraph.prebuilt import create_react_agent

K, K_HOLD = 2, 1
HOLD_S = float(os.environ.get("BENCH_W15_HOLD_S", "4"))


def _hold_tool() -> Any:
    from langchain_core.tools import tool

    @tool("echo")
    async def echo_hold(x: int) -> str:
        """Echo the integer back, after a while."""
        await asyncio.sleep(HOLD_S)
        return f"ok {x}"

    return echo_hold


def make_graph(hold: bool = False, checkpointer: Any = None) -> Any:
    model = make_model(K_HOLD if hold else K)
    tool = _hold_tool() if hold else make_tool()
    return create_react_agent(model, [tool], checkpointer=checkpointer)


graph = make_graph()
graph_hold = make_graph(hold=True)
