"""The state keys the agent, the hooks and the CLI share are named once, in
``graph_agent.messages``, at the lowest layer they all build on: a hook writes the key the
agent reads."""

from __future__ import annotations

import ast
from pathlib import Path

import graph_agent.messages as messages

ROOT = Path(__file__).parents[1]
SHARED = {messages.MESSAGES, messages.JUMP_TO, messages.REJECTED}


def test_neither_the_agent_the_hooks_nor_the_cli_name_a_shared_key_again() -> None:
    assigned: dict[str, list[str]] = {key: [] for key in SHARED}
    paths = [ROOT / "graph_agent" / "messages.py"]
    for package in ("graph_agent/agent", "graph_agent/cli", "hooks"):
        paths.extend(sorted((ROOT / package).rglob("*.py")))
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and node.value.value in SHARED
            ):
                assigned[node.value.value].append(str(path.relative_to(ROOT)))
    assert assigned == {key: ["graph_agent/messages.py"] for key in SHARED}


def test_the_values_are_the_agents_state_keys() -> None:
    assert (messages.MESSAGES, messages.JUMP_TO, messages.REJECTED) == (
        "messages",
        "jump_to",
        "rejected_tool_calls",
    )
