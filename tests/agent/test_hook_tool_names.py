"""Hooks that name tools are checked against the agent's tools at build()."""

from __future__ import annotations

import re

import pytest

from graph_agent import AgentBuildError, ReactAgent, ScriptedChatModel, tool
from hooks import HumanInTheLoopHook, ToolCallLimitHook


@tool
def refund(order: str) -> str:
    """Gives the money back."""
    return "refunded"


@tool
def search(query: str) -> str:
    """Searches."""
    return "found"


@pytest.mark.parametrize(
    ("hook", "name"),
    [
        (HumanInTheLoopHook(["refnud"]), "HumanInTheLoopHook"),
        (HumanInTheLoopHook({"refund": True, "delete_all": "Really?"}), "HumanInTheLoopHook"),
        (ToolCallLimitHook(run_limit=2, tool_name="serch"), "ToolCallLimitHook[serch]"),
    ],
)
def test_a_hook_naming_a_tool_the_agent_lacks_fails_at_build(hook: object, name: str) -> None:
    builder = ReactAgent.builder().name("a").model(ScriptedChatModel(["x"]))
    builder = builder.tools(refund, search).hooks(hook)
    with pytest.raises(AgentBuildError, match=re.escape(f"hook '{name}' names tool")) as caught:
        builder.build()
    assert "its tools: refund, search" in str(caught.value)


def test_the_error_suggests_the_closest_name() -> None:
    with pytest.raises(AgentBuildError, match="did you mean 'refund'"):
        ReactAgent(
            name="a", model=ScriptedChatModel(["x"]), tools=[refund],
            hooks=[HumanInTheLoopHook(["refnud"])],
        )  # fmt: skip


def test_hooks_naming_the_agents_tools_build() -> None:
    agent = ReactAgent(
        name="a", model=ScriptedChatModel(["x"]), tools=[refund, search],
        hooks=[HumanInTheLoopHook(["refund"]), ToolCallLimitHook(run_limit=1, tool_name="search")],
    )  # fmt: skip
    assert agent.call("hi").text == "x"


def test_tools_known_only_at_call_time_are_not_checked() -> None:
    agent = ReactAgent(
        name="a", model=ScriptedChatModel(["x"]), tool_providers=[lambda request: [refund]],
        hooks=[HumanInTheLoopHook(["refund"])],
    )  # fmt: skip
    assert agent.call("hi").text == "x"
