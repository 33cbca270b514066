"""Fault test: worker processes running agent conversations are SIGKILLed at random points;
each thread is then continued from another process, and its history must be one an
OpenAI-compatible server accepts, with no message lost or repeated. On SQLite and on a real
Redis server."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from checkpoint import RedisSaver, SqliteSaver
from graph_agent import (
    AssistantMessage,
    Message,
    Prompt,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)

ROOT = Path(__file__).resolve().parents[2]
RUNS = 25  # per saver: 50 kills in all

COMMON = textwrap.dedent(
    """
    import json, random, time
    from graph_agent import (AssistantMessage, FunctionChatModel, ReactAgent, ToolCall,
                             ToolResponseMessage, UserMessage, tool)

    def check(messages):
        waiting = set()
        for m in messages:
            if waiting and not isinstance(m, ToolResponseMessage):
                raise AssertionError(f"unanswered tool calls {sorted(waiting)} before {m!r}")
            if isinstance(m, AssistantMessage):
                waiting = {c.id for c in m.tool_calls}
            elif isinstance(m, ToolResponseMessage):
                for r in m.responses:
                    if r.id not in waiting:
                        raise AssertionError(f"a response to {r.id}, which is not pending")
                    waiting.discard(r.id)

    def answer(prompt):
        messages = list(prompt.messages)
        check(messages)  # what a strict server checks
        last = messages[-1]
        if isinstance(last, UserMessage):
            n = sum(isinstance(m, UserMessage) for m in messages)
            call = ToolCall(id=f"call_{n}", name="step", arguments=json.dumps({"n": n}))
            return AssistantMessage("", tool_calls=(call,))
        return AssistantMessage(f"done {sum(isinstance(m, UserMessage) for m in messages)}")

    @tool
    def step(n: int) -> str:
        '''One slow step.'''
        time.sleep(random.random() * 0.02)
        return f"step {n}"

    def make(saver):
        return ReactAgent(name="w", model=FunctionChatModel(answer), tools=[step], saver=saver)
    """
)

WORKER = COMMON + textwrap.dedent(
    """
    import sys
    kind, where, thread = sys.argv[1:4]
    if kind == "sqlite":
        from checkpoint import SqliteSaver
        saver = SqliteSaver(where)
    else:
        from checkpoint import RedisSaver
        saver = RedisSaver.from_url(where)
    agent = make(saver)
    print("ready", flush=True)
    for turn in range(1000):
        agent.call(f"turn {turn}", {"thread_id": thread})
    """
)

namespace: dict[str, Any] = {}
exec(compile(COMMON, "worker-common", "exec"), namespace)  # the same model and tool here


def assert_consistent(messages: list[Message]) -> None:
    namespace["check"](messages)
    turns = [m.text for m in messages if isinstance(m, UserMessage)]
    numbered = [t for t in turns if t.startswith("turn ")]
    assert numbered == [f"turn {i}" for i in range(len(numbered))], numbered  # none lost or twice
    ids = [r.id for m in messages if isinstance(m, ToolResponseMessage) for r in m.responses]
    assert len(ids) == len(set(ids)), ids  # every call answered once


def kill_at_random(kind: str, where: str, thread: str, rng: random.Random) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, kind, where, thread],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == b"ready", worker.stderr.read()  # type: ignore[union-attr]
        time.sleep(rng.random() * 0.25)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        for stream in (worker.stdout, worker.stderr):
            if stream is not None:
                stream.close()


def run_and_resume(saver: Any, kind: str, where: str, seed: int) -> None:
    rng = random.Random(seed)
    agent = namespace["make"](saver)
    for run in range(RUNS):
        thread = f"killed-{seed}-{run}"
        kill_at_random(kind, where, thread, rng)
        config = {"thread_id": thread}
        before = agent.get_state(config)
        if before is not None:
            assert_consistent(list(before.values["messages"]))
        answer = agent.call("after the crash", config)  # continued from this process
        assert answer.text.startswith("done")
        assert_consistent(list(agent.get_state(config).values["messages"]))


def test_killed_sqlite_workers_leave_consistent_threads(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    with SqliteSaver(path) as saver:
        run_and_resume(saver, "sqlite", str(path), seed=1)


def test_killed_redis_workers_leave_consistent_threads(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        run_and_resume(RedisSaver(client), "redis", redis_url, seed=2)
    finally:
        client.close()


def test_the_check_refuses_what_a_strict_server_refuses() -> None:
    call = ToolCall(id="a", name="step", arguments="{}")
    dangling = [UserMessage("turn 0"), AssistantMessage("", tool_calls=(call,)), UserMessage("x")]
    with pytest.raises(AssertionError, match="unanswered tool calls"):
        namespace["answer"](Prompt(dangling))
