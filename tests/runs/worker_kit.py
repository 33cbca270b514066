"""Servers and workers as real processes on one redis-server, for the tests of runs that
outlive every process: ``graph-agent serve --queue`` and ``graph-agent worker`` on an agent
whose model awaits 50 ms and whose tool records each side effect in Redis and notices two
runners on one thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis

from tests.redis_servers import free_port

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120.0

AGENT = '''
import asyncio, os, time
import redis.asyncio
from graph_agent import AssistantMessage, FunctionChatModel, ReactAgent, ToolCall, tool
from graph_agent import ToolResponseMessage

BOARD = redis.asyncio.Redis.from_url(os.environ["BOARD"])  # what the test reads
ME = str(os.getpid())

@tool
async def record(note: str) -> str:
    """Record a side effect (once per call the model asks for)."""
    thread = note.partition(":")[0]
    if not await BOARD.set(f"runner:{thread}", ME, nx=True, px=1000):
        await BOARD.rpush("violations", f"two runners on {thread}: {note}")
    if note.endswith(":block"):  # a sync wait in an async tool: it blocks the event loop
        time.sleep(float(os.environ.get("BLOCK_SECONDS", "3")))
    await asyncio.sleep(0.01)
    await BOARD.rpush("effects", note)
    await BOARD.delete(f"runner:{thread}")
    return f"recorded {note}"

async def reply(prompt):
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        text = str(last.responses[0].response_data)
        return AssistantMessage(f"done {text.removeprefix('recorded ')}")
    note = last.text
    if note.endswith(":die"):  # its worker dies in it, every time
        await BOARD.rpush(f"died:{note}", ME)
        os.kill(os.getpid(), 9)
    if note.endswith(":hold") and await BOARD.set(f"once:{note}", ME, nx=True):
        await BOARD.set(f"victim:{note}", ME)  # the test stops this worker, then lets go
        while not await BOARD.exists(f"go:{note}"):
            await asyncio.sleep(0.02)
    if note.endswith((":kill", ":stop")) and await BOARD.set(f"once:{note}", ME, nx=True):
        await BOARD.set(f"victim:{note}", ME)  # the test kills or stops this process now
        await asyncio.sleep(3600)
    await asyncio.sleep(0.05)
    call = ToolCall(id="call_" + note.replace(":", "_"), name="record", arguments='{"note": "%s"}' % note)
    return AssistantMessage("", tool_calls=[call])

agent = ReactAgent(name="recorder", model=FunctionChatModel(reply), tools=[record])
'''


@dataclass
class Fleet:
    """The servers and workers of one test, on the redis-server at ``url``."""

    url: str
    module: Path
    logs: Path
    board_url: str  # a single redis-server where the agent's tool writes what the test reads
    servers: list[tuple[subprocess.Popen[bytes], str]] = field(default_factory=list)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def env(self, **more: str) -> dict[str, str]:
        home = str(self.logs)
        return dict(os.environ, PYTHONPATH=str(ROOT), BOARD=self.board_url, HOME=home, **more)

    def serve(self) -> str:
        port = free_port()
        log = (self.logs / f"serve-{port}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "graph_agent.cli", "serve", f"{self.module}:agent",
             "--queue", self.url, "--port", str(port), "--no-access-log"],
            env=self.env(), stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, self.read(f"serve-{port}.log")
            assert time.monotonic() < deadline, "graph-agent serve did not start"
            with suppress(httpx.TransportError):
                if httpx.get(f"{base}/ok", timeout=1).status_code == 200:
                    break
            time.sleep(0.05)
        self.servers.append((process, base))
        return base

    def worker(self, *options: str, **env: str) -> subprocess.Popen[bytes]:
        n = len(self.workers)
        log = (self.logs / f"worker-{n}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "graph_agent.cli", "worker", f"{self.module}:agent",
             "--queue", self.url, "--name", f"w{n}", *options],
            env=self.env(**env), stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        self.workers.append(process)
        return process

    def read(self, name: str) -> str:
        return (self.logs / name).read_text(errors="replace")

    def worker_log(self, process: subprocess.Popen[bytes]) -> str:
        return self.read(f"worker-{self.workers.index(process)}.log")

    def board(self) -> redis.Redis:
        return redis.Redis.from_url(self.board_url, decode_responses=True)

    def stop(self) -> None:
        for process in [*self.workers, *(p for p, _ in self.servers)]:
            with suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGCONT)
            if process.poll() is None:
                process.terminate()
        for process in [*self.workers, *(p for p, _ in self.servers)]:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def fleet(url: str, directory: Path, board_url: str | None = None) -> Iterator[Fleet]:
    module = directory / "recorder.py"
    module.write_text(AGENT)
    logs = directory / "logs"
    logs.mkdir()
    running = Fleet(url, module, logs, board_url or url)
    try:
        yield running
    finally:
        running.stop()


def said(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def wait_for(check: Any, what: str, timeout: float = TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def expected_messages(notes: list[str]) -> list[str]:
    """The contents a thread holds after a run per note, each once, in order."""
    texts: list[str] = []
    for note in notes:
        texts += [note, "", f"recorded {note}", f"done {note}"]
    return texts
