"""``build()`` (and ``ReactAgent(...)``) check every option and report every problem at once."""

from __future__ import annotations

from typing import Any

import pytest

from graph_agent import (
    AgentBuildError,
    GraphAgentError,
    KeyStrategy,
    ReactAgent,
    ScriptedChatModel,
    StaticToolCallbackResolver,
    tool,
)
from hooks import AgentHook, HookPosition, ModelHook


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return query


@tool(name="lookup")
def another_lookup(query: str) -> str:
    """Another tool with the same name."""
    return query


class BeforeOnly(ModelHook):
    positions = (HookPosition.BEFORE_MODEL, HookPosition.AFTER_MODEL)

    def before_model(self, state: Any, config: Any) -> None:
        return None


class Nothing(AgentHook):
    """Implements no position."""


class Appends(ModelHook):
    key_strategies = {"trace": KeyStrategy.APPEND}

    def after_model(self, state: Any, config: Any) -> None:
        return None


class Merges(AgentHook):
    key_strategies = {"trace": KeyStrategy.MERGE}

    def after_agent(self, state: Any, config: Any) -> None:
        return None


def problems_of(style: str, **options: Any) -> list[str]:
    """The problems ``build()`` (or the constructor) reports for ``options``."""
    with pytest.raises(AgentBuildError) as caught:
        if style == "keywords":
            ReactAgent(**options)
        else:
            builder = ReactAgent.builder()
            for key, value in options.items():
                method = getattr(builder, key)
                if isinstance(value, list):
                    method(*value)
                else:
                    method(value)
            builder.build()
    error = caught.value
    assert isinstance(error, ValueError) and isinstance(error, GraphAgentError)
    for problem in error.problems:
        assert problem in str(error)
    return error.problems


@pytest.fixture(params=["builder", "keywords"])
def style(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_every_problem_is_reported_at_once(style: str) -> None:
    problems = problems_of(
        style,
        tools=[lookup, another_lookup],
        tool_names=["search"],
        hooks=[BeforeOnly()],
        interceptors=[object()],
    )
    assert len(problems) == 6, problems
    text = "\n".join(problems)
    assert "no name" in text and ".name('assistant')" in text
    assert "no model" in text
    assert "tool_names ['search'] need a resolver" in text
    assert "two tools are named 'lookup'" in text
    assert "hook 'BeforeOnly' runs at ['after_model'] but does not implement after_model()" in text
    assert "neither a ModelInterceptor nor a ToolInterceptor" in text


def test_the_message_counts_the_problems_and_names_the_agent() -> None:
    with pytest.raises(AgentBuildError) as caught:
        ReactAgent(name="helper", tools=[lookup, another_lookup])
    message = str(caught.value)
    assert message.startswith("cannot build agent 'helper' (2 problems):")
    with pytest.raises(AgentBuildError, match=r"^cannot build agent 'helper': no model"):
        ReactAgent(name="helper")


def test_a_name_the_resolver_cannot_resolve(style: str) -> None:
    problems = problems_of(
        style,
        name="a",
        model=ScriptedChatModel([]),
        tool_names=["lookup", "missing", "gone"],
        resolver=StaticToolCallbackResolver([lookup]),
    )
    assert len(problems) == 2
    assert problems[0].startswith("tool name 'missing' cannot be resolved by")
    assert problems[1].startswith("tool name 'gone' cannot be resolved by")


def test_duplicates_across_tool_sources(style: str) -> None:
    problems = problems_of(
        style,
        name="a",
        model=ScriptedChatModel([]),
        tools=[lookup],
        tool_names=["lookup"],
        resolver=StaticToolCallbackResolver([another_lookup]),
    )
    assert problems == [
        "two tools are named 'lookup'; tool names must be unique: rename one with @tool(name=...)"
    ]


def test_the_same_tool_twice_is_not_a_duplicate() -> None:
    agent = ReactAgent(
        name="a",
        model=ScriptedChatModel([]),
        tools=[lookup],
        tool_names=["lookup"],
        resolver=StaticToolCallbackResolver([lookup]),
    )
    assert [t.tool_definition.name for t in agent.tools] == ["lookup"]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"model": object()}, "is not a ChatModel"),
        ({"tools": ["lookup"]}, "tools: 'lookup' is not a tool"),
        ({"method_tools": [object()]}, "method_tools:"),
        ({"tool_callback_providers": [object()]}, "has no get_tool_callbacks()"),
        ({"tool_providers": [42]}, "tool_providers: 42 is not callable"),
        ({"hooks": [object()]}, "is not a Hook"),
        ({"hooks": [Nothing()]}, "hook 'Nothing' implements none of"),
        ({"hooks": [Appends(), Appends()]}, "two hooks are named 'Appends'"),
        ({"hooks": [Appends(), Merges()]}, "declares KeyStrategy.MERGE for 'trace'"),
        (
            {"key_strategies": {"jump_to": KeyStrategy.APPEND}},
            "'jump_to', a key the agent reserves",
        ),
        ({"max_iterations": 0}, "max_iterations must be a positive int, got 0"),
        ({"output_key": "messages"}, "output_key 'messages' is a key the agent already uses"),
        ({"unknown_tool_strategy": "ignore"}, "unknown_tool_strategy must be"),
    ],
)
def test_each_bad_option_is_named(style: str, options: dict[str, Any], expected: str) -> None:
    settings: dict[str, Any] = {"name": "a", "model": ScriptedChatModel([])}
    settings.update(options)
    problems = problems_of(style, **settings)
    assert len(problems) == 1, problems
    assert expected in problems[0]
