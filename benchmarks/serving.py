"""W15: what the Agent Protocol server adds to a run, ours (benchmarks/WORKLOADS.md, "W15
serving"; LangGraph's side, ``langgraph dev``: benchmarks/peer_serving.py).

The agent is W2's (benchmarks/serving_agents.py: ``ReactAgent``, scripted model, ``echo``),
``K = 2``. In process: ``invoke`` and ``ainvoke`` with a ``MemorySaver``, each run on a new
thread. Served: ``graph-agent serve serving_agents:agent serving_agents:agent_hold --saver
memory`` in its own process, driven by benchmarks/serving_client.py (``langgraph-sdk``) in
another: sequential ``runs.wait`` and ``runs.stream`` (added time per run and per streamed
event, and the server's CPU time per run), then, on a fresh server, 1,000 streams opened at
once on the agent whose tool holds (``W15_streams_1000``). ``BENCH_W15_SAVER=sqlite`` serves
with ``--saver sqlite:<temp file>`` instead (and runs in process on a ``SqliteSaver``), for
comparison; the default is memory, as ``langgraph dev``'s in-memory runtime.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import _common
import _serving
from serving_agents import K, make_agent

__all__ = ["w15_serving"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _inprocess(sizes: dict[str, Any], saver: Any) -> dict[str, Any]:
    from graph_agent import UserMessage

    agent = make_agent(saver=saver)
    answer = f"final answer after {K} tool calls"

    def run(thread_id: str) -> None:
        out = agent.invoke({"messages": [UserMessage("go")]}, _common.cfg(thread_id))
        assert out["messages"][-1].text == answer, out

    async def arun(thread_id: str) -> None:
        out = await agent.ainvoke({"messages": [UserMessage("go")]}, _common.cfg(thread_id))
        assert out["messages"][-1].text == answer, out

    return _serving.time_inprocess(run, arun, sizes["runs"], sizes["trials"])


def _saver(kind: str, folder: str) -> tuple[Any, str]:
    """The in-process saver and the server's ``--saver`` for ``kind``."""
    if kind == "sqlite":
        from checkpoint import SqliteSaver

        return SqliteSaver(str(Path(folder) / "inprocess.sqlite")), (
            f"sqlite:{Path(folder) / 'server.sqlite'}"
        )
    from checkpoint import MemorySaver

    return MemorySaver(), "memory"


def w15_serving() -> None:
    sizes = dict(_serving.SMOKE if _common.SIZES["w15_smoke"] else _serving.SIZES)
    kind = os.environ.get("BENCH_W15_SAVER", "memory")
    graph_agent_cli = Path(sys.executable).with_name("graph-agent")
    env = dict(
        os.environ,
        BENCH_W15_HOLD_S=str(sizes["hold_s"]),
        PYTHONPATH=os.pathsep.join([str(ROOT), str(HERE)]),
    )
    fast = {m: importlib.util.find_spec(m) is not None for m in ("uvloop", "httptools")}
    with _serving.temp_dir() as folder:
        saver, saver_spec = _saver(kind, folder)
        inproc = _inprocess(sizes, saver)
        # no access log: langgraph dev's logs are off too (peer_serving.py)
        command = [str(graph_agent_cli), "serve", "serving_agents:agent",
                   "serving_agents:agent_hold", "--host", "127.0.0.1", "--port", "{port}",
                   "--saver", saver_spec, "--no-access-log"]  # fmt: skip
        with _serving.http_server(command, env, "/assistants/bench", cwd=folder) as (url, pid):
            runs = _serving.run_client(url, pid, "runs", sizes)
            rss_after_runs = _serving.status_mb(pid, "VmHWM")
        if kind == "sqlite":  # a fresh file for the streams' server
            saver_spec = f"sqlite:{Path(folder) / 'streams.sqlite'}"
            command[-1] = saver_spec
        with _serving.http_server(command, env, "/assistants/bench", cwd=folder) as (url, pid):
            streams = _serving.run_client(url, pid, "streams", sizes)
    server = {
        "name": "graph-agent serve",
        "saver": kind,
        "uvicorn": importlib.metadata.version("uvicorn"),
        "starlette": importlib.metadata.version("starlette"),
        "loop": "uvloop" if fast["uvloop"] else "asyncio",
        "http": "httptools" if fast["httptools"] else "h11",
        "rss_after_runs_mb": rss_after_runs,
    }
    _serving.emit_lines(inproc, runs, streams, server, "" if kind == "memory" else "_" + kind)
