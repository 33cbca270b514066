"""``graph-agent chat TARGET``: a chat with the user's own agent or graph, as a real process.

The agent's model, tools and hooks are the ones it was built with; its thread is kept by
the ``--saver`` store (default: the SQLite file under ``HOME``) when it has no saver of its
own but the ``MemorySaver`` every ``ReactAgent`` gets, and by its own saver otherwise, which
``--saver`` may then not replace. A graph is chatted with through ``state["messages"]``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

import graph_agent.messages  # noqa: F401  (registers the message types the stored threads hold)
from checkpoint import SqliteSaver
from tests._cli import ERROR_PREFIX, FakeOpenAI, calls, cli_env, run_cli

APP = """
import os

from checkpoint import SqliteSaver
from graph_agent import (
    END, START, AssistantMessage, KeyStrategy, OpenAIChatModel, ReactAgent, StateGraph, tool,
)
from hooks import HumanInTheLoopHook, MessageWindowHook


@tool
def shout(text: str) -> str:
    \"\"\"Say text loudly.\"\"\"
    return text.upper() + "!"


def build(*hooks, **options):
    builder = (
        ReactAgent.builder()
        .name("helper")
        .model(OpenAIChatModel())  # OPENAI_BASE_URL and GRAPH_AGENT_MODEL of the process
        .tools(shout)
        .system_prompt("You shout.")
        .hooks(*hooks)
    )
    for name, value in options.items():
        builder = getattr(builder, name)(value)
    return builder.build()


agent = build(MessageWindowHook(1))  # the model sees the last message only
careful = build(HumanInTheLoopHook(["shout"]))
kept = build(saver=SqliteSaver(os.environ["APP_DB"])) if "APP_DB" in os.environ else None


def reply(state):
    said = state["messages"][-1].text
    return {"messages": [AssistantMessage(f"echo: {said} ({len(state['messages'])} before)")]}


g = StateGraph(key_strategies={"messages": KeyStrategy.APPEND})
g.add_node("reply", reply)
g.add_edge(START, "reply").add_edge("reply", END)
echo = g.compile(name="echo")


class Flow:  # anything whose .graph is a compiled graph
    graph = echo


flow = Flow()

plain = StateGraph()
plain.add_node("count", lambda state: {"n": 1})
plain.add_edge(START, "count").add_edge("count", END)
"""


@pytest.fixture
def app(tmp_path: Path) -> Path:
    path = tmp_path / "app.py"
    path.write_text(textwrap.dedent(APP))
    return path


def env_for(tmp_path: Path, fake_model: FakeOpenAI, **settings: str) -> dict[str, str]:
    return cli_env(
        tmp_path, OPENAI_BASE_URL=fake_model.url(), GRAPH_AGENT_MODEL="app-model", **settings
    )


def test_your_agent_with_its_model_tools_and_hooks_on_the_default_sqlite_file(
    app: Path, fake_model: FakeOpenAI, tmp_path: Path
) -> None:
    fake_model.replies.append(calls(("shout", {"text": "hi"})))
    env = env_for(tmp_path, fake_model)
    done = run_cli("chat", f"{app}:agent", input="hi\nagain\n", env=env)
    assert (done.returncode, done.stderr) == (0, "")
    banner = done.stdout.splitlines()[0]
    assert banner.startswith(
        f"chatting with agent 'helper' (app-model at {fake_model.url()}) from {app}:agent on thread "
        "'helper' (kept in sqlite:~/.graph-agent/chat.sqlite)"
    )
    assert "  -> shout(" in done.stdout and "  <- shout: HI!" in done.stdout  # its tool
    assert "you said 'again' (1 messages from you)" in done.stdout  # its hook's window
    first = fake_model.requests[0]
    assert [t["function"]["name"] for t in first["tools"]] == ["shout"]
    assert first["messages"][0] == {"role": "system", "content": "You shout."}
    assert {r["model"] for r in fake_model.requests} == {"app-model"}
    assert (tmp_path / ".graph-agent" / "chat.sqlite").is_file()
    again = run_cli("chat", f"{app}:agent", input="/history\n", env=env)  # a new process
    assert "user: again" in again.stdout and again.stderr == ""


def test_your_agent_on_the_saver_given(app: Path, fake_model: FakeOpenAI, tmp_path: Path) -> None:
    env = env_for(tmp_path, fake_model)
    store = tmp_path / "chats.sqlite"
    done = run_cli("chat", f"{app}:flow", "--saver", f"sqlite:{store}", input="one\n", env=env)
    assert done.returncode == 0, done.stderr
    with SqliteSaver(store) as saver:
        kept = saver.get("echo")
    assert kept is not None and [m.text for m in kept.values["messages"]] == [
        "one",
        "echo: one (1 before)",
    ]


def test_an_agent_with_a_saver_of_its_own_keeps_its_threads_there(
    app: Path, fake_model: FakeOpenAI, tmp_path: Path
) -> None:
    own = tmp_path / "own.sqlite"
    env = env_for(tmp_path, fake_model, APP_DB=str(own))
    done = run_cli("chat", f"{app}:kept", "--thread", "mine", input="hello\n", env=env)
    assert (done.returncode, done.stderr) == (0, "")
    assert f"on thread 'mine' (kept in its own SqliteSaver('{own}'" in done.stdout
    assert not (tmp_path / ".graph-agent").exists()
    with SqliteSaver(own) as saver:
        assert saver.get("mine") is not None
    refused = run_cli("chat", f"{app}:kept", "--saver", "memory", input="hello\n", env=env)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == (
        f"{ERROR_PREFIX}--saver: {app}:kept keeps its threads in its own saver (SqliteSaver); "
        "drop --saver, or build it without a saver to choose one here\n"
    )


def test_a_pause_for_a_person_is_one_line(
    app: Path, fake_model: FakeOpenAI, tmp_path: Path
) -> None:
    fake_model.replies.append(calls(("shout", {"text": "hi"})))
    env = env_for(tmp_path, fake_model)
    done = run_cli("chat", f"{app}:careful", "--saver", "memory", input="hi\n", env=env)
    assert (done.returncode, done.stderr) == (0, "")
    (line,) = [line for line in done.stdout.splitlines() if "[paused for input: " in line]
    assert "'tool_approval'" in line and "Command(resume=...)" in line
    assert "<- shout" not in done.stdout  # the tool did not run


@pytest.mark.parametrize("name", ["echo", "flow"])
def test_a_graph_with_messages(app: Path, tmp_path: Path, name: str) -> None:
    env = cli_env(tmp_path)  # no model anywhere: the graph answers
    done = run_cli("chat", f"{app}:{name}", "--saver", "memory", input="a\nb\n/history\n", env=env)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[0].startswith(
        f"chatting with graph 'echo' from {app}:{name} on thread 'echo' (kept in memory"
    )
    assert "echo: a (1 before)" in done.stdout and "echo: b (3 before)" in done.stdout
    assert "user: b\nassistant: echo: b (3 before)" in done.stdout


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("{app}:plain", "{app}:plain is a graph whose state has no 'messages' key"),
        ("{app}:nope", "{app} has no attribute 'nope'; graphs it defines: "),
        ("{app}", "TARGET must look like path/to/file.py:OBJECT"),
        ("missing.py:agent", "file not found: missing.py"),
        ("no_such_module:agent", "no module named 'no_such_module'"),
    ],
)
def test_target_errors_are_one_line_and_exit_2(
    app: Path, tmp_path: Path, target: str, said: str
) -> None:
    env = cli_env(tmp_path, OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    done = run_cli("chat", target.format(app=app), input="hi\n", env=env, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(ERROR_PREFIX + said.format(app=app)), done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / ".graph-agent").exists()


@pytest.mark.parametrize("flag", ["--model", "--base-url"])
def test_model_flags_with_a_target_are_a_usage_error(app: Path, tmp_path: Path, flag: str) -> None:
    done = run_cli("chat", f"{app}:agent", flag, "x", input="hi\n", env=cli_env(tmp_path))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(
        f"{ERROR_PREFIX}{flag} applies to the built-in agent; {app}:agent brings its own model"
    )
    assert len(done.stderr.splitlines()) == 1
