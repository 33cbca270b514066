"""W18's client: one served agent run over every protocol the server speaks, in its own
process (benchmarks/protocols.py starts it).

    python benchmarks/protocols_client.py --url URL --server-pid PID --runs 100 --trials 3

The agent is W15's ``bench`` (K = 2: five steps, two tool calls). Per protocol, ``--runs``
sequential runs per trial, each on a new thread, the answer of each checked:

- ``ap_wait``, ``ap_stream``: the Agent Protocol, ``langgraph-sdk``'s ``threads.create`` then
  ``runs.wait`` or ``runs.stream`` (W15's stream modes), both timed: the other protocols make
  the run's thread in their one call;
- ``a2a_send``, ``a2a_stream``: A2A 1.0, ``a2a-sdk``'s client, a blocking ``SendMessage`` and
  a streamed one, each a new task in a new context;
- ``mcp_call``: MCP, the official client's ``call_tool`` over streamable HTTP, one session
  (the ``initialize`` handshake of the 2025 revisions);
- ``mcp_call_asking``: the same, from a session whose client declared elicitation (its
  calls answered over SSE: a run may stop to ask);
- ``mcp_call_modern``: the same call from the official ``mcp.Client`` of the 2026-07-28
  revision (no session: each request stands alone);
- ``agui``: AG-UI 1.0, ``POST /ag-ui/bench`` with a ``RunAgentInput`` on a new thread, its SSE
  read to the end (httpx; every event counted).

The protocols take turns within a trial, every 20 runs (a slice; the order rotates from trial
to trial), so the machine's drift and the server's growing heap fall on all alike. Per
protocol, the median slice is reported: wall time per run, the server's CPU time per run (its
CPU-time clock, less what it burns idle over the same wall time; the mean over all slices
beside it) and, for streams, the events a run sends. The median, not the sum: the
collector's full collections, 80-160 ms each once every few hundred runs as the in-memory
server's heap grows, land in whichever slice runs then, and the sum of a trial charged them to
that protocol alone. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
from protocols_agents import ANSWER as CHUNKS_ANSWER
from serving_client import cpu_seconds, idle_cpu_share, make_client, median, one_stream, one_wait

ANSWER = "final answer after 2 tool calls"
WARMUP = 5
SLICE = 20  # runs of one protocol in a row: the protocols take turns every SLICE runs


@asynccontextmanager
async def a2a_client(url: str, assistant: str, *, streaming: bool) -> AsyncIterator[Any]:
    from a2a.client import ClientConfig, create_client

    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(
            f"{url}/a2a/{assistant}", ClientConfig(httpx_client=http, streaming=streaming)
        )
        try:
            yield client
        finally:
            await client.close()


async def a2a_run(client: Any, answer: str = ANSWER) -> int:
    """One A2A message to a new context; the number of responses the client yielded. A
    blocking send's answer is its task's artifact; a stream's is its artifact chunks, joined
    as A2A says (``append``), so the stream is read once and nothing more is asked."""
    from a2a.types import Message, Part, Role, SendMessageRequest

    message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text="go")])
    responses = [r async for r in client.send_message(SendMessageRequest(message=message))]
    text = ""
    for response in responses:
        if response.HasField("task"):
            text = "".join(p.text for a in response.task.artifacts for p in a.parts)
        elif response.HasField("artifact_update"):
            update = response.artifact_update
            chunk = "".join(p.text for p in update.artifact.parts)
            text = text + chunk if update.append else chunk
    assert text == answer, responses
    return len(responses)


@asynccontextmanager
async def mcp_session(url: str, *, asking: bool = False) -> AsyncIterator[Any]:
    """An MCP session of the official client; ``asking``: it declares elicitation (never
    asked here: the agent does not stop), so the server answers its calls over SSE."""
    from mcp import ClientSession

    from graph_agent.mcp import _sdk

    async def never_asked(context: Any, params: Any) -> Any:
        raise AssertionError(f"the bench agent asked {params}")

    callbacks = {"elicitation_callback": never_asked} if asking else {}
    async with (
        _sdk.http_streams(f"{url}/mcp", None) as (read, write),
        ClientSession(read, write, **callbacks) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def mcp_modern_client(url: str) -> AsyncIterator[Any]:
    """The official ``mcp.Client`` of the 2026-07-28 revision: no session, a request each."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(timeout=60) as http:
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with Client(transport, mode="2026-07-28") as client:
            yield client


async def mcp_run(session: Any) -> int:
    result = await session.call_tool("bench", {"message": "go"})
    assert not result.is_error and result.content[0].text == ANSWER, result
    return 1


async def agui_run(
    http: httpx.AsyncClient, url: str, assistant: str = "bench", answer: str = ANSWER
) -> int:
    """One AG-UI run on a new thread, its SSE read to the end; the events it sent."""
    body = {
        "threadId": uuid.uuid4().hex,
        "runId": uuid.uuid4().hex,
        "state": {},
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": "go"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    events, kinds, text = 0, set(), []
    async with http.stream("POST", f"{url}/ag-ui/{assistant}", json=body) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            event = json.loads(line[5:])
            events += 1
            kinds.add(event["type"])
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                text.append(event["delta"])
            assert event["type"] != "RUN_ERROR", event
    assert "RUN_FINISHED" in kinds and "".join(text).endswith(answer), (kinds, text)
    return events


async def phase(args: argparse.Namespace) -> dict[str, Any]:
    async with AsyncExitStack() as stack:
        ap = await stack.enter_async_context(make_client(args.url, 16))
        a2a_plain = await stack.enter_async_context(a2a_client(args.url, "bench", streaming=False))
        a2a_streaming = await stack.enter_async_context(
            a2a_client(args.url, "bench", streaming=True)
        )
        a2a_chunks = await stack.enter_async_context(
            a2a_client(args.url, "bench_chunks", streaming=True)
        )
        mcp = await stack.enter_async_context(mcp_session(args.url))
        mcp_asking = await stack.enter_async_context(mcp_session(args.url, asking=True))
        mcp_modern = await stack.enter_async_context(mcp_modern_client(args.url))
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=60))

        # a thread made in the timed run, as the other protocols make theirs in their call
        async def ap_wait() -> int:
            thread = (await ap.threads.create())["thread_id"]
            await one_wait(ap, thread, "bench", ANSWER)
            return 1

        async def ap_stream(assistant: str = "bench", answer: str = ANSWER) -> int:
            thread = (await ap.threads.create())["thread_id"]
            events, _ = await one_stream(ap, thread, assistant, answer)
            return events

        runs: dict[str, Callable[[], Awaitable[int]]] = {
            "ap_wait": ap_wait,
            "ap_stream": ap_stream,
            "a2a_send": lambda: a2a_run(a2a_plain),
            "a2a_stream": lambda: a2a_run(a2a_streaming),
            "mcp_call": lambda: mcp_run(mcp),
            "mcp_call_asking": lambda: mcp_run(mcp_asking),
            "mcp_call_modern": lambda: mcp_run(mcp_modern),
            "agui": lambda: agui_run(http, args.url),
            # the same streams of the agent whose answer comes in CHUNKS_ANSWER's words
            "ap_stream_chunks": lambda: ap_stream("bench_chunks", CHUNKS_ANSWER),
            "a2a_stream_chunks": lambda: a2a_run(a2a_chunks, CHUNKS_ANSWER),
            "agui_chunks": lambda: agui_run(http, args.url, "bench_chunks", CHUNKS_ANSWER),
        }
        only = [name for name in args.only.split(",") if name] or list(runs)
        runs = {name: runs[name] for name in only}

        for run in runs.values():
            for _ in range(WARMUP):
                await run()
        idle_before = await idle_cpu_share(args.server_pid)
        wall: dict[str, list[float]] = {name: [] for name in runs}  # per run, a slice each
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        events: dict[str, int] = {}
        names = list(runs)
        slices = max(1, args.runs // SLICE)
        for trial in range(args.trials):
            shift = trial % len(names)
            for at in range(slices):
                for name in names[shift:] + names[:shift]:
                    count = args.runs // slices + (at < args.runs % slices)
                    c0, t0 = cpu_seconds(args.server_pid), time.perf_counter()
                    for _ in range(count):
                        events[name] = await runs[name]()
                    wall[name].append((time.perf_counter() - t0) / count)
                    cpu[name].append((cpu_seconds(args.server_pid) - c0) / count)
        idle_after = await idle_cpu_share(args.server_pid)
    idle = (idle_before + idle_after) / 2
    out: dict[str, Any] = {"runs": args.runs, "trials": args.trials, "idle_cpu_share": idle}
    for name in runs:
        busy = [c - idle * w for c, w in zip(cpu[name], wall[name])]
        out[name] = {
            "wall_us": round(median(wall[name]) * 1e6, 1),
            "server_cpu_us": round(median(busy) * 1e6, 1),
            "server_cpu_mean_us": round(sum(busy) / len(busy) * 1e6, 1),
            "events_per_run": events[name],
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated protocols (default: all)")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(phase(args))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
