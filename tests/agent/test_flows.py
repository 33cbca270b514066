"""Flows of agents (the full tests follow)."""

from __future__ import annotations

from typing import Any

import pytest

from graph_agent import LoopAgent, SequentialAgent
from hooks import AgentHook

from .conftest import Runner
from .flow_kit import scripted


class Remember(AgentHook):
    """Records, when its agent starts, the state keys it is given."""

    def __init__(self, *keys: str) -> None:
        self.keys = keys
        self.seen: list[dict[str, Any]] = []

    def before_agent(self, state: Any, config: Any) -> None:
        self.seen.append({k: state.get(k) for k in self.keys})


@pytest.mark.parametrize("cls", [SequentialAgent, LoopAgent])
def test_a_sequential_or_loop_flow_output_key_holds_its_answer(run: Runner, cls: Any) -> None:
    # a flow is a sub-agent like any other: its output_key hands its answer on
    first, _ = scripted("first", "draft")
    last, _ = scripted("last", "summary text")
    options = {"max_iterations": 1} if cls is LoopAgent else {}
    inner = cls(name="inner", sub_agents=[first, last], output_key="summary", **options)
    remember = Remember("summary")
    reader, _ = scripted("reader", "read it", hooks=[remember])
    outer = SequentialAgent(name="outer", sub_agents=[inner, reader])

    state = run.invoke(outer, "go")

    assert remember.seen == [{"summary": "summary text"}]
    assert state["summary"] == "summary text"
    assert (
        run.invoke(
            cls(name="alone", sub_agents=[scripted("x", "X")[0]], output_key="o", **options), "go"
        )["o"]
        == "X"
    )
