"""The flows' options are written once, in ``FlowOptions``: ``FlowAgent(...)``'s keywords,
which flow takes which option, the builder's methods and the options table of
docs/multi-agent.md all follow it."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

import pytest

from graph_agent import ReactAgent, ScriptedChatModel
from graph_agent.agent import flows
from graph_agent.agent._option_record import options_table
from graph_agent.agent.flows import FlowAgent, FlowAgentBuilder
from graph_agent.agent.flows._options import FlowOptions
from graph_agent.errors import AgentBuildError

OPTIONS = dataclasses.fields(FlowOptions)
PAGE = Path(__file__).parents[2] / "docs" / "multi-agent.md"
FLOWS = [getattr(flows, name) for name in flows.__all__ if name.endswith("Agent")]
FLOWS.remove(FlowAgent)


def test_the_constructor_takes_the_options_of_every_flow_with_their_types_and_defaults() -> None:
    parameters = list(inspect.signature(FlowAgent.__init__).parameters.values())[1:]
    assert [(p.name, p.kind, p.annotation, p.default) for p in parameters] == [
        *[
            (o.name, inspect.Parameter.KEYWORD_ONLY, o.type, o.default)
            for o in OPTIONS
            if not o.metadata["only"]
        ],
        ("options", inspect.Parameter.VAR_KEYWORD, "Any", inspect.Parameter.empty),
    ]


def test_an_option_names_flows_that_exist() -> None:
    names = {flow.__name__ for flow in FLOWS}
    for option in OPTIONS:
        assert set(option.metadata["only"]) <= names, option.name


def test_the_builder_has_a_method_per_option_documented_from_the_record() -> None:
    for option in OPTIONS:
        method = getattr(FlowAgentBuilder, option.name)
        assert option.metadata["doc"][1:] in method.__doc__
        for flow in option.metadata["only"]:
            assert flow in method.__doc__


def _agent(name: str) -> ReactAgent:
    return ReactAgent(name=name, model=ScriptedChatModel(["ok"]), description=f"does {name}")


@pytest.mark.parametrize("flow", FLOWS, ids=lambda flow: flow.__name__)
def test_a_flow_takes_exactly_its_options(flow: Any) -> None:
    own = {o.name for o in OPTIONS if flow.__name__ in o.metadata["only"]}
    other = {o.name for o in OPTIONS if o.metadata["only"]} - own
    model = ScriptedChatModel(["ok"])
    values = {"model": model, "instruction": "choose", "fallback_agent": _agent("spare")}
    given = {name: values.get(name, FlowOptions.default(name)) for name in own}
    taken = flow(name="f", sub_agents=[_agent("a")], **given)
    for name in own - {"merge_strategy"}:  # a parallel flow keeps the function it names
        assert getattr(taken, name) == given[name], name
    if other:
        with pytest.raises(AgentBuildError) as caught:
            flow(name="f", sub_agents=[_agent("a")], **given, **{n: None for n in other})
        assert caught.value.problems[-1] == (
            f"unknown option(s) {sorted(other)} for a {flow.__name__}"
        )


def test_the_docs_table_is_the_records() -> None:
    text = PAGE.read_text()
    start = text.index("| option | what it does | default |")
    end = text.index("\n\n", start)
    assert text[start:end] == options_table(FlowOptions), (
        "docs/multi-agent.md's options table is not FlowOptions' "
        "(graph_agent/agent/flows/_options.py): paste options_table(FlowOptions) "
        "(graph_agent/agent/_option_record.py) into the page"
    )
