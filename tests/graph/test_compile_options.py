"""What ``compile()`` lets a graph's owner declare, and what a compiled graph tells about
itself (the public ways ReactAgent and the CLI use instead of the graph's internals)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import END, START, GraphValidationError, KeyStrategy, StateGraph
from graph_agent.events import RunStart


def _graph() -> StateGraph:
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("step", lambda state: {"log": ["step"]})
    graph.add_edge(START, "step").add_edge("step", END)
    return graph


def test_before_input_adjusts_new_input_to_a_thread_that_has_a_checkpoint() -> None:
    seen: list[tuple[Any, Any]] = []

    def before_input(
        values: Mapping[str, Any], inputs: Mapping[str, Any], kept: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        seen.append((list(values["log"]), dict(inputs)))
        return {"log": ["repaired", *inputs["log"]]}

    app = _graph().compile(saver=MemorySaver(), before_input=before_input)
    config = {"thread_id": "t"}
    assert app.invoke({"log": ["first"]}, config)["log"] == ["first", "step"]
    assert seen == []  # a new thread: nothing to adjust
    assert app.invoke({"log": ["second"]}, config)["log"] == [
        "first",
        "step",
        "repaired",
        "second",
        "step",
    ]
    assert seen == [(["first", "step"], {"log": ["second"]})]


def test_before_input_must_be_callable() -> None:
    with pytest.raises(GraphValidationError, match="before_input must be a function"):
        _graph().compile(before_input="repair")  # type: ignore[arg-type]


@pytest.mark.parametrize("agent", [False, True])
def test_agent_marks_the_runs_as_agent_runs(agent: bool) -> None:
    app = _graph().compile(agent=agent)
    start = next(iter(app.stream_events({"log": []})))
    assert isinstance(start, RunStart) and start.agent is agent


def test_a_compiled_graph_tells_its_keys_and_what_only_runs_async() -> None:
    async def later(state: Any) -> dict[str, Any]:
        return {"log": ["later"]}

    graph = _graph()
    graph.add_node("later", later)
    graph.add_edge("step", "later").add_edge("later", END)
    app = graph.compile()
    assert dict(app.key_strategies) == {"log": KeyStrategy.APPEND}
    assert app.async_only == ("later",)
    app.key_strategies["other"] = KeyStrategy.REPLACE  # type: ignore[index]
    assert "other" not in app.key_strategies  # a copy
