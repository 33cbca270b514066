"""W18: what each protocol adds to a run of the same served agent (benchmarks/WORKLOADS.md,
"W18 protocols"; ours only: LangGraph's server has no AG-UI and its A2A and MCP routes need
its licensed runtime).

The agent is W15's ``bench`` (``ReactAgent``, scripted model, K = 2), served by ``graph-agent
serve serving_agents:agent --saver memory`` in its own process; benchmarks/protocols_client.py
runs it over the Agent Protocol (``runs.wait``, ``runs.stream``), A2A (send, stream), MCP
(``call_tool``, in a session and as a client of 2026-07-28) and AG-UI, in turns. The
in-process run (``invoke`` on a ``MemorySaver``) is timed first. Per protocol:

- ``added_cpu_us``: the server's CPU time per run less the in-process run's wall time (what
  serving over that protocol adds: HTTP, JSON, the run's records and log, the encoding);
- ``vs_agent_protocol``: that, over the Agent Protocol's (``runs.wait`` for the protocols that
  answer once, ``runs.stream`` for those that stream); the target is at most 1.2;
- for the streams, ``added_cpu_per_event_us``: what one more streamed event costs the
  server. Each stream is run twice, on a second server (so the long answers' garbage does
  not fall on the per-run figures), on ``bench`` and on ``bench_chunks``
  (benchmarks/protocols_agents.py: the same run, its answer streamed in 400 words), and the
  difference in server CPU per run is divided by the difference in events per run; so the
  costs a stream pays once a run (its request, its first and last events) stay in the
  per-run figure. Its ratio to ``runs.stream``'s is ``per_event_vs_agent_protocol``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import _common
import _serving
from serving import _inprocess

__all__ = ["w18_protocols"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASELINE = {
    "a2a_send": "ap_wait",
    "mcp_call": "ap_wait",
    "mcp_call_asking": "ap_wait",
    "mcp_call_modern": "ap_wait",
    "a2a_stream": "ap_stream",
    "agui": "ap_stream",
    "a2a_stream_chunks": "ap_stream_chunks",
    "agui_chunks": "ap_stream_chunks",
}
SIZES = {"runs": 100, "trials": 5}
SMOKE = {"runs": 3, "trials": 1}


PER_RUN = "ap_wait,ap_stream,a2a_send,a2a_stream,mcp_call,mcp_call_asking,mcp_call_modern,agui"
PER_EVENT = "ap_stream,ap_stream_chunks,a2a_stream,a2a_stream_chunks,agui,agui_chunks"


def _client(url: str, pid: int, sizes: dict[str, int], only: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(HERE / "protocols_client.py"), "--url", url, "--server-pid", str(pid),
         "--runs", str(sizes["runs"]), "--trials", str(sizes["trials"]), "--only", only],
        capture_output=True, text=True, cwd=HERE,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(HERE)])),
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"W18 client failed:\n{done.stderr[-4000:]}")
    return dict(json.loads(done.stdout.splitlines()[-1]))


def w18_protocols() -> None:
    from checkpoint import MemorySaver

    sizes = SMOKE if _common.SIZES["w15_smoke"] else SIZES
    inproc = _inprocess({"runs": sizes["runs"] * 2, "trials": sizes["trials"]}, MemorySaver())
    inprocess_us = inproc["inprocess_ainvoke_us"]  # the server runs runs on its loop
    graph_agent_cli = Path(sys.executable).with_name("graph-agent")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(HERE)]))
    command = [str(graph_agent_cli), "serve", "serving_agents:agent", "protocols_agents:agent",
               "--host", "127.0.0.1",
               "--port", "{port}", "--saver", "memory", "--no-access-log"]  # fmt: skip
    found: dict[str, Any] = {}
    for only in (PER_RUN, PER_EVENT):  # a server each: the long answers' garbage apart
        with (
            _serving.temp_dir() as folder,
            _serving.http_server(command, env, "/assistants/bench", cwd=folder) as (url, pid),
        ):
            phase = _client(url, pid, sizes, only)
        if only == PER_EVENT:  # its streams of ``bench`` are for their events alone
            phase = {f"{k}_base" if k in ("ap_stream", "a2a_stream", "agui") else k: v
                     for k, v in phase.items()}  # fmt: skip
        found.update(phase)
    records: dict[str, dict[str, Any]] = {}
    for name, figures in found.items():
        if not isinstance(figures, dict) or name.endswith("_base"):
            continue
        records[name] = {
            "wall_us": figures["wall_us"],
            "server_cpu_us": figures["server_cpu_us"],
            "inprocess_us": inprocess_us,
            "added_cpu_us": round(figures["server_cpu_us"] - inprocess_us, 1),
            "events_per_run": figures["events_per_run"],
        }
        chunked, base = found.get(f"{name}_chunks"), found.get(f"{name}_base")
        if isinstance(chunked, dict) and isinstance(base, dict):  # the extra events' cost
            more_cpu = chunked["server_cpu_us"] - base["server_cpu_us"]
            more_events = chunked["events_per_run"] - base["events_per_run"]
            records[name]["added_cpu_per_event_us"] = round(more_cpu / more_events, 2)
            records[name]["extra_events"] = more_events
    for name, base in BASELINE.items():
        if name in records and base in records:
            records[name]["vs_agent_protocol"] = _ratio(
                records[name], records[base], "added_cpu_us"
            )
            records[name]["per_event_vs_agent_protocol"] = _ratio(
                records[name], records[base], "added_cpu_per_event_us"
            )
    count = found["runs"] * found["trials"]
    for name, extra in records.items():
        _common.emit(f"W18_{name}", count, extra["wall_us"] * 1e-6 * count, **extra)


def _ratio(a: dict[str, Any], b: dict[str, Any], key: str) -> float | None:
    if a.get(key) is None or not b.get(key):
        return None
    return round(a[key] / b[key], 3)
