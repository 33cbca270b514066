"""``compile(clean_input=...)``: each run's new input rewritten before anything sees it (the
``run_start`` event, the input checkpoint, the state), or refused with the run failing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import END, START, GraphValidationError, KeyStrategy, StateGraph


def _graph() -> StateGraph:
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("step", lambda state: {"log": ["step"]})
    graph.add_edge(START, "step").add_edge("step", END)
    return graph


def hide(inputs: Mapping[str, Any]) -> Mapping[str, Any]:
    if "forbidden" in inputs["log"]:
        raise ValueError("no forbidden input")
    return {"log": [item.replace("secret", "***") for item in inputs["log"]]}


@pytest.mark.parametrize("listened", [False, True])
def test_the_input_is_cleaned_before_it_is_announced_or_stored(listened: bool) -> None:
    app = _graph().compile(saver=MemorySaver(), clean_input=hide)
    config = {"thread_id": f"t{listened}"}
    if listened:
        events = list(app.stream_events({"log": ["a secret"]}, config))
        assert events[0].kind == "run_start" and events[0].input == {"log": ["a ***"]}
        assert "secret" not in repr(events)
    else:
        assert app.invoke({"log": ["a secret"]}, config)["log"] == ["a ***", "step"]
    history = [s.values["log"] for s in app.get_state_history(config)]
    assert history == [["a ***", "step"], ["a ***"]]


def test_what_clean_input_raises_fails_the_run_before_anything_is_stored() -> None:
    app = _graph().compile(saver=MemorySaver(), clean_input=hide)
    with pytest.raises(ValueError, match="no forbidden input"):
        app.invoke({"log": ["forbidden"]}, {"thread_id": "t"})
    assert app.get_state({"thread_id": "t"}) is None
    events = []
    with pytest.raises(ValueError):
        for event in app.stream_events({"log": ["forbidden"]}, {"thread_id": "u"}):
            events.append(event)
    assert [(e.kind, getattr(e, "input", None)) for e in events] == [
        ("run_start", None),
        ("run_error", None),
    ]


def test_clean_input_must_be_callable() -> None:
    with pytest.raises(GraphValidationError, match="clean_input must be a function"):
        _graph().compile(clean_input="hide")  # type: ignore[arg-type]
