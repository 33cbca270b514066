"""The agent's options are written once, in ``AgentOptions``: ``ReactAgent(...)``'s keywords,
the builder's methods and the options table of docs/agents.md all follow it."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from graph_agent import ReactAgent, ReactAgentBuilder, ScriptedChatModel
from graph_agent.agent._option_record import options_table
from graph_agent.agent._options import AgentOptions

OPTIONS = dataclasses.fields(AgentOptions)
PAGE = Path(__file__).parents[2] / "docs" / "agents.md"


def test_the_constructor_takes_every_option_with_its_type_and_default() -> None:
    parameters = list(inspect.signature(ReactAgent.__init__).parameters.values())[1:]
    assert [(p.name, p.kind, p.annotation, p.default) for p in parameters] == [
        (o.name, inspect.Parameter.KEYWORD_ONLY, o.type, o.default) for o in OPTIONS
    ]


def test_the_builder_has_a_method_per_option_documented_from_the_record() -> None:
    for option in OPTIONS:
        method = getattr(ReactAgentBuilder, option.name)
        assert method.__doc__, option.name
        if option.name != "output_type":  # its method also takes the strategy
            assert option.metadata["doc"][1:] in method.__doc__


def test_the_builder_forms() -> None:
    builder = ReactAgent.builder()
    assert builder.hooks() is builder  # an "add" option takes any number, none included
    assert builder.parallel_tool_execution() is builder  # a bool one turns it on
    assert builder.system_prompt(text="hi") is builder  # the argument keeps its name
    with pytest.raises(TypeError, match=r"ReactAgentBuilder\.name\(name\): missing"):
        builder.name()


def test_both_forms_give_the_same_record() -> None:
    model = ScriptedChatModel(["ok"])
    built = (
        ReactAgent.builder()
        .name("a")
        .model(model)
        .parallel_tool_execution(False)
        .tool_context({"x": 1})
        .build()
    )
    given = ReactAgent(name="a", model=model, parallel_tool_execution=False, tool_context={"x": 1})
    assert repr(built) == repr(given)
    assert built.tools == given.tools and built.max_iterations == given.max_iterations


def test_the_docs_table_is_the_records() -> None:
    text = PAGE.read_text()
    start = text.index("| option | what it does | default |")
    end = text.index("\n\n", start)
    assert text[start:end] == options_table(AgentOptions), (
        "docs/agents.md's options table is not AgentOptions' (graph_agent/agent/_options.py): "
        "paste options_table(AgentOptions) (graph_agent/agent/_option_record.py) into the page"
    )
