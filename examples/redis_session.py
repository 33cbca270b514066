"""A chat kept in Redis: one process starts it, another process continues it by thread id.

The agent's saver is a ``RedisSaver``: every step of the conversation is written to Redis,
so any process that knows the thread id can pick the conversation up where it stopped.

    python examples/redis_session.py --url redis://127.0.0.1:6379/0 [--thread ID] first
    python examples/redis_session.py --url redis://127.0.0.1:6379/0 [--thread ID] second

``first`` starts the thread afresh and tells the assistant who you are; ``second``, run
later in a new process, asks the assistant to recall it. With no ``--url`` the script
starts its own ``redis-server`` (or ``valkey-server``; ``$REDIS_SERVER`` overrides) on a
free loopback port, runs ``first`` and ``second`` in two subprocesses of itself, and stops
the server; it exits with code 2 if there is no server binary. ``--live`` uses a real model
(see examples/_models.py).

The example's keys live under the prefix ``graph_agent-example`` and expire after an hour.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _models import choose, served

from checkpoint import RedisSaver
from graph_agent import ReactAgent, RunnableConfig
from graph_agent.messages import AssistantMessage, UserMessage
from graph_agent.models import ChatModel, FunctionChatModel, Prompt

KEY_PREFIX = "graph_agent-example"
TTL_SECONDS = 3600
FIRST = "Hi! My name is Ada and I'm planning a trip to Lisbon."
SECOND = "What is my name, and where am I going?"


def offline_model() -> FunctionChatModel:
    """Answers from the conversation it is sent, as an LLM would: it knows only what the
    thread's earlier messages (loaded from Redis) tell it."""

    def reply(prompt: Prompt) -> AssistantMessage:
        said = " ".join(m.text for m in prompt.messages if isinstance(m, UserMessage))
        name = re.search(r"[Mm]y name is (\w+)", said)
        trip = re.search(r"trip to (\w+)", said)
        question = [m.text for m in prompt.messages if isinstance(m, UserMessage)][-1]
        if "my name" in question.lower() and "?" in question:
            if name is None:
                return AssistantMessage("I don't know yet: you haven't told me.")
            where = f", and you're going to {trip.group(1)}" if trip else ""
            return AssistantMessage(f"You are {name.group(1)}{where}.")
        if name is not None:
            return AssistantMessage(f"Nice to meet you, {name.group(1)}! I'll remember that.")
        return AssistantMessage("Noted.")

    return FunctionChatModel(reply)


def build(model: ChatModel, saver: RedisSaver | None = None) -> ReactAgent:
    """The travel assistant, on ``model``, its threads in ``saver`` (none: the server's)."""
    builder = (
        ReactAgent.builder()
        .name("travel-assistant")
        .model(model)
        .system_prompt("You are a friendly travel assistant. Be brief.")
    )
    return (builder.saver(saver) if saver is not None else builder).build()


# served: `graph-agent serve examples/redis_session.py:agent --saver redis://...` (its model:
# see _models.py); importing connects to no Redis
agent = build(served(offline_model))


def build_agent(args: argparse.Namespace) -> tuple[ReactAgent, RedisSaver]:
    saver = RedisSaver.from_url(args.url, key_prefix=KEY_PREFIX, ttl=TTL_SECONDS)
    return build(choose(args, offline_model()), saver), saver


def run_step(args: argparse.Namespace) -> int:
    """One step of the conversation, in this process."""
    agent, saver = build_agent(args)
    config = RunnableConfig(thread_id=args.thread)
    print(f"[{args.step}] process {os.getpid()}, thread {args.thread!r}, saver {saver!r}")
    if args.step == "first":
        saver.delete_thread(args.thread)  # a fresh conversation every time the demo runs
        question = FIRST
    else:
        snapshot = agent.get_state(config)
        if snapshot is None:
            print(
                f"thread {args.thread!r} has no conversation in Redis (expired, or 'first' was "
                "not run against this server)",
                file=sys.stderr,
            )
            return 1
        earlier = snapshot.values["messages"]
        print(f"[{args.step}] loaded {len(earlier)} messages from Redis:")
        for message in earlier:
            print(f"    {message.message_type}: {message.text}")
        question = SECOND
    answer = agent.call(question, config)
    print(f"[{args.step}] user: {question}")
    print(f"[{args.step}] assistant: {answer.text}")
    head = saver.get(args.thread)
    assert head is not None
    print(
        f"[{args.step}] thread now holds {len(head.values['messages'])} messages "
        f"(checkpoint {head.id}, keys {saver.keys(args.thread)[0].rsplit(':', 1)[0]}:*)"
    )
    return 0


# -- running both steps against a server of our own ----------------------------------------


def server_binary() -> str | None:
    return (
        os.environ.get("REDIS_SERVER")
        or shutil.which("redis-server")
        or shutil.which("valkey-server")
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(port: int, process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the Redis server exited with code {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the Redis server on port {port} did not answer within {timeout}s")


def run_steps_as_processes(args: argparse.Namespace, url: str) -> int:
    """``first``, then ``second``, each in a new Python process running this script."""
    for step in ("first", "second"):
        command = [sys.executable, str(Path(__file__).resolve()), "--url", url]
        command += ["--thread", args.thread, *(["--live"] if args.live else []), step]
        print(f"\n$ python examples/redis_session.py --url {url} --thread {args.thread} {step}")
        sys.stdout.flush()
        code = subprocess.run(command, check=False).returncode
        if code != 0:
            return code
    return 0


def run_both(args: argparse.Namespace, binary: str) -> int:
    """Start a server, run ``first`` and ``second`` as two processes, stop the server."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="redis-session-") as directory:
        server = subprocess.Popen(
            [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
             "--appendonly", "no", "--dir", directory],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_ready(port, server)
            url = f"redis://127.0.0.1:{port}/0"
            print(f"started {Path(binary).name} (pid {server.pid}) at {url}")
            code = run_steps_as_processes(args, url)
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    print(f"\nstopped the server (pid {server.pid})")
    return code


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="A chat kept in Redis, continued by a second process from its thread id."
    )
    parser.add_argument("--url", help="Redis URL, e.g. redis://127.0.0.1:6379/0 (default: start "
                        "a redis-server of our own and run both steps)")  # fmt: skip
    parser.add_argument(
        "--thread",
        default="demo-session",
        help="the conversation's thread id (default: %(default)s)",
    )
    parser.add_argument(
        "--live",
        action="store_true",
        help="use a real OpenAI-compatible model (OPENAI_API_KEY, OPENAI_BASE_URL, GRAPH_AGENT_MODEL)",
    )
    parser.add_argument(
        "step", nargs="?", choices=("first", "second"), help="the step to run in this process"
    )
    args = parser.parse_args(argv)
    if args.step is not None and args.url is None:
        parser.error(f"'{args.step}' needs --url (without --url, both steps run on a server of "
                     "our own)")  # fmt: skip
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.step is not None:
        return run_step(args)
    if args.url is not None:  # both steps, each in a process of its own, on the given server
        return run_steps_as_processes(args, args.url)
    binary = server_binary()
    if binary is None:
        print(
            "redis_session.py: no redis-server or valkey-server on PATH (or $REDIS_SERVER). "
            "Install one (e.g. apt-get install redis-server), or pass --url to use a running "
            "server.",
            file=sys.stderr,
        )
        return 2
    return run_both(args, binary)


if __name__ == "__main__":
    raise SystemExit(main())
