#!/usr/bin/env python3
"""W15, LangGraph's side: what its local Agent Server (``langgraph dev``, from
``langgraph-cli[inmem]``) adds to a run (benchmarks/WORKLOADS.md, "W15 serving"; ours:
benchmarks/serving.py).

    .venv-peer/bin/python benchmarks/peer_serving.py [--out FILE] [--smoke]

The graph is W2's LangGraph agent (benchmarks/peer_serving_graphs.py: ``create_react_agent``,
the scripted ``BaseChatModel``, ``echo``), ``K = 2``. In process: ``invoke`` and ``ainvoke``
with an ``InMemorySaver``, each run on a new thread. Served: ``langgraph dev`` in its own
process, from a temporary folder whose generated ``langgraph.json`` names ``bench`` and
``bench_hold``, with:

- ``--no-browser --no-reload`` (one process, nothing opened), ``--host 127.0.0.1``, a free port;
- ``--n-jobs-per-worker 1100`` (default 10: runs past the tenth wait in its queue; 1,100 lets
  1,000 run at once);
- ``--allow-blocking``: turns off blockbuster, the dev server's detector of blocking calls,
  which wraps many standard-library functions (a development aid; off, the server is faster);
- ``"disable_persistence": true`` in langgraph.json: the in-memory runtime keeps its state in
  memory only (otherwise a thread pickles it all to ``.langgraph_api/`` every 10 s; our
  ``--saver memory`` writes no file either);
- ``LOG_LEVEL=WARNING`` (its default INFO logs three lines per run; ours logs warnings only);
- ``LANGSMITH_TRACING=false``, ``LANGCHAIN_TRACING_V2=false``, no LangSmith key (so its
  metadata loop does not start: it says "No license key ... skipping metadata loop") and
  ``LANGGRAPH_NO_VERSION_CHECK=true`` (else a thread asks PyPI for a newer langgraph-api at
  start) and ``LANGGRAPH_CLI_NO_ANALYTICS=1`` (else a thread of the CLI posts the command to
  its usage log, a Supabase host: strace showed its DNS query). Checked with ``strace -f -e
  trace=connect`` over a start, runs, streams and a minute idle: the server then connects to
  nothing but loopback.

The client (benchmarks/serving_client.py) and the JSON lines are ours' (benchmarks/_serving.py).
Its in-memory queue takes a pending run at most every 0.5 s when idle (``Runs.next`` sleeps
0.5 s, and a run created during that sleep waits for the next poll), so a sequential run over
HTTP takes 0.5-1 s here whatever the server does: ``peer_runs`` (20) runs per trial instead of
``runs``, and the server's CPU time per run (``server_cpu_us_per_run``) is the figure that
says what it does per run.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _serving  # noqa: E402  (benchmarks/ is not a package)

N_JOBS_PER_WORKER = 1100


def _inprocess(sizes: dict[str, Any]) -> dict[str, Any]:
    from langgraph.checkpoint.memory import InMemorySaver
    from peer_serving_graphs import K, make_graph

    graph = make_graph(checkpointer=InMemorySaver())
    answer = f"final answer after {K} tool calls"
    inputs = {"messages": [("user", "go")]}

    def config(thread_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread_id}}

    def run(thread_id: str) -> None:
        out = graph.invoke(inputs, config(thread_id))
        assert out["messages"][-1].content == answer, out

    async def arun(thread_id: str) -> None:
        out = await graph.ainvoke(inputs, config(thread_id))
        assert out["messages"][-1].content == answer, out

    return _serving.time_inprocess(run, arun, sizes["runs"], sizes["trials"])


def write_config(folder: str) -> None:
    graphs = HERE / "peer_serving_graphs.py"
    config = {
        "dependencies": [str(HERE)],
        "graphs": {"bench": f"{graphs}:graph", "bench_hold": f"{graphs}:graph_hold"},
        "disable_persistence": True,
    }
    (Path(folder) / "langgraph.json").write_text(json.dumps(config, indent=2))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="also append the JSON lines to this file")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (checks wiring only)")
    args = parser.parse_args(argv)
    sizes = dict(_serving.SMOKE if args.smoke else _serving.SIZES)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_"))}
    env.update(_serving.OFFLINE_ENV, LOG_LEVEL="WARNING", BENCH_W15_HOLD_S=str(sizes["hold_s"]))
    command = [str(Path(sys.executable).with_name("langgraph")), "dev", "--no-browser",
               "--no-reload", "--allow-blocking", "--host", "127.0.0.1", "--port", "{port}",
               "--n-jobs-per-worker", str(N_JOBS_PER_WORKER)]  # fmt: skip
    inproc = _inprocess(sizes)
    with _serving.temp_dir() as folder:
        write_config(folder)
        with _serving.http_server(command, env, "/ok", cwd=folder) as (url, pid):
            runs = _serving.run_client(url, pid, "runs", {**sizes, "runs": sizes["peer_runs"]})
            rss_after_runs = _serving.status_mb(pid, "VmHWM")
        with _serving.http_server(command, env, "/ok", cwd=folder) as (url, pid):
            streams = _serving.run_client(url, pid, "streams", sizes)
    server = {
        "name": "langgraph dev",
        "saver": "memory (langgraph-runtime-inmem)",
        "langgraph_api": importlib.metadata.version("langgraph-api"),
        "langgraph_runtime_inmem": importlib.metadata.version("langgraph-runtime-inmem"),
        "langgraph_cli": importlib.metadata.version("langgraph-cli"),
        "uvicorn": importlib.metadata.version("uvicorn"),
        "loop": "uvloop" if importlib.util.find_spec("uvloop") else "asyncio",
        "http": "httptools" if importlib.util.find_spec("httptools") else "h11",
        "n_jobs_per_worker": N_JOBS_PER_WORKER,
        "rss_after_runs_mb": rss_after_runs,
    }
    lines = _serving.emit_lines(inproc, runs, streams, server)
    if args.out:
        with open(args.out, "a") as out:
            out.writelines(json.dumps(line) + "\n" for line in lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
