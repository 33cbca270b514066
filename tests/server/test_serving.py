"""Serving for real: a thread that outlives its server process, 50 clients at once, a
cancelled run that leaves a consistent thread, and ``graph-agent serve``'s choice of saver."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client, get_sync_client

from checkpoint import MemorySaver, SqliteSaver
from graph_agent import (
    AssistantMessage,
    FunctionChatModel,
    Prompt,
    ReactAgent,
    ScriptedChatModel,
    ToolCall,
    tool,
)
from graph_agent.cli._errors import CliError
from graph_agent.cli._serve import served_objects
from graph_agent.server import create_app

from ..agent._strict import assert_prompts_valid
from .conftest import live_server


def echo_agent(saver: Any, replies: int = 10) -> ReactAgent:
    return ReactAgent(name="echo", model=ScriptedChatModel(["hello"] * replies), saver=saver)


def test_a_thread_outlives_its_server_process(tmp_path: Path) -> None:
    path = tmp_path / "threads.sqlite"
    with (
        SqliteSaver(path) as saver,
        live_server(create_app({"echo": echo_agent(saver)})) as url,
        get_sync_client(url=url) as client,
    ):
        thread = client.threads.create()
        client.runs.wait(
            thread["thread_id"], "echo", input={"messages": [{"role": "user", "content": "1"}]}
        )
    # a new process would build the same agent on the same file
    with (
        SqliteSaver(path) as saver,
        live_server(create_app({"echo": echo_agent(saver)})) as url,
        get_sync_client(url=url) as client,
    ):
        assert client.threads.get(thread["thread_id"])["status"] == "idle"
        state = client.runs.wait(
            thread["thread_id"], "echo", input={"messages": [{"role": "user", "content": "2"}]}
        )
        assert isinstance(state, dict)
        assert [m["content"] for m in state["messages"]] == ["1", "hello", "2", "hello"]


def test_fifty_clients_at_once_each_on_its_own_thread() -> None:
    agent = echo_agent(MemorySaver(), replies=100)

    async def one(url: str, n: int) -> str:
        async with get_client(url=url) as client:
            thread = await client.threads.create()
            state = await client.runs.wait(
                thread["thread_id"],
                "echo",
                input={"messages": [{"role": "user", "content": f"client {n}"}]},
            )
            assert isinstance(state, dict)
            assert state["messages"][0]["content"] == f"client {n}"
            return str(state["messages"][-1]["content"])

    async def everyone(url: str) -> list[str]:
        return await asyncio.gather(*(one(url, n) for n in range(50)))

    with live_server(create_app({"echo": agent})) as url:
        answers = asyncio.run(everyone(url))
    assert answers == ["hello"] * 50


def test_a_cancelled_run_leaves_a_thread_a_provider_accepts() -> None:
    release = threading.Event()
    entered = threading.Event()

    @tool
    def slow_lookup(query: str) -> str:
        """Looks something up, slowly."""
        entered.set()
        release.wait(10)
        return "found"

    def reply(prompt: Prompt) -> AssistantMessage:
        if len(prompt.messages) == 1:
            return AssistantMessage(
                "",
                tool_calls=[
                    ToolCall(id="c1", name="slow_lookup", arguments=json.dumps({"query": "x"}))
                ],
            )
        return AssistantMessage("done")

    model = FunctionChatModel(reply)
    agent = ReactAgent(name="slow", model=model, tools=[slow_lookup], saver=MemorySaver())
    with live_server(create_app({"slow": agent})) as url, get_sync_client(url=url) as client:
        thread = client.threads.create()
        run = client.runs.create(
            thread["thread_id"], "slow", input={"messages": [{"role": "user", "content": "go"}]}
        )
        assert entered.wait(10)
        client.runs.cancel(thread["thread_id"], run["run_id"])
        release.set()
        client.runs.join(thread["thread_id"], run["run_id"])
        assert client.runs.get(thread["thread_id"], run["run_id"])["status"] == "interrupted"
        state = client.runs.wait(
            thread["thread_id"], "slow", input={"messages": [{"role": "user", "content": "again"}]}
        )
    assert isinstance(state, dict)
    assert state["messages"][-1]["content"] == "done"
    assert assert_prompts_valid(model) >= 2  # no request ever held an unanswered call


OPENED: list[SqliteSaver] = []  # savers the served module below opened, closed by the test


def test_serve_keeps_threads_in_the_given_saver_unless_a_target_has_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"  # the default saver's file is under HOME
    monkeypatch.setenv("HOME", str(home))
    module = tmp_path / "served.py"
    module.write_text(
        "from checkpoint import SqliteSaver\n"
        "from graph_agent import ReactAgent, ScriptedChatModel\n"
        "from tests.server.test_serving import OPENED\n"
        "plain = ReactAgent(name='plain', model=ScriptedChatModel(['hi']))\n"
        "again = ReactAgent(name='plain', model=ScriptedChatModel(['hi']))\n"
        "def durable():\n"
        f"    OPENED.append(SqliteSaver({str(tmp_path / 'own.sqlite')!r}))\n"
        "    return ReactAgent(name='durable', model=ScriptedChatModel(['hi']), saver=OPENED[-1])\n"
    )
    spec = f"sqlite:{tmp_path / 'server.sqlite'}"
    try:
        served, made, where = served_objects([f"{module}:plain", f"{module}:durable"], None)
        assert made is not None
        made.close()
        assert sorted(served) == ["durable", "plain"]
        assert served["plain"].saver is made  # the default file, not memory
        assert (home / ".graph-agent" / "server.sqlite").is_file()
        assert served["durable"].saver is OPENED[-1]  # its own
        assert where.startswith("sqlite:")
        with pytest.raises(CliError, match="its own saver"):
            served_objects([f"{module}:durable"], spec)
        with pytest.raises(CliError, match="two targets are named 'plain'"):
            served_objects([f"{module}:plain", f"{module}:again"], spec)
    finally:
        while OPENED:
            OPENED.pop().close()
