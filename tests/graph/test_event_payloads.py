"""What an event carries is a copy: a listener, or a stream's reader, that changes an event's
update, input, values or data in place changes its event only, never the run's state, its
checkpoints, what the next node sees or the caller's own objects."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import END, START, Command, KeyStrategy, StateGraph, interrupt
from graph_agent.events import (
    CustomEvent,
    InterruptEvent,
    NodeEnd,
    RunEnd,
    RunEvent,
    RunStart,
    emit,
)


def mask(event: RunEvent) -> None:
    """What a careless listener does: mask a secret and append to lists, in place."""
    if isinstance(event, RunStart) and isinstance(event.input, dict):
        event.input["secret"] = "***"
        event.input["tags"].append("seen")
    elif isinstance(event, NodeEnd) and event.node == "fetch":
        event.update["secret"] = "***"
        event.update["items"].append("injected")
        event.update["nested"]["list"].append("injected")
    elif isinstance(event, CustomEvent):
        event.data["items"].append("from custom")
    elif isinstance(event, RunEnd):
        event.values["items"].append("after the run")
        event.values["nested"]["list"].clear()
        event.values["tags"].clear()


class Masker:
    def on_event(self, event: RunEvent) -> None:
        mask(event)


class AsyncMasker:
    def on_event(self, event: RunEvent) -> None:  # pragma: no cover - async runs only
        raise AssertionError("an async run uses aon_event")

    async def aon_event(self, event: RunEvent) -> None:
        await asyncio.sleep(0)
        mask(event)


def _graph(seen: list[Any]) -> StateGraph:
    def fetch(state: Any) -> dict[str, Any]:
        items = ["a"]
        emit({"items": items})  # the very list the node returns
        return {"secret": "s3cr3t", "items": items, "nested": {"list": [1]}}

    def use(state: Any) -> dict[str, Any]:
        seen.append(copy.deepcopy(state.data()))
        return {"used": True}

    graph = StateGraph()
    graph.add_node("fetch", fetch).add_node("use", use)
    graph.add_edge(START, "fetch").add_edge("fetch", "use")
    return graph.add_edge("use", END)


EXPECTED = {
    "tags": ["t"],
    "secret": "s3cr3t",
    "items": ["a"],
    "nested": {"list": [1]},
    "used": True,
}


def _invoke(mode: str, graph: StateGraph, inputs: dict[str, Any], config: Any) -> Any:
    """Run ``graph`` while its events get changed in place; the app and the run's result."""
    saver = MemorySaver()
    if mode == "listener":
        app = graph.compile(saver=saver, listeners=[Masker()])
        return app, app.invoke(inputs, config)
    if mode == "alistener":
        app = graph.compile(saver=saver, listeners=[Masker()])
        return app, asyncio.run(app.ainvoke(inputs, config))
    if mode == "aon_event":
        app = graph.compile(saver=saver, listeners=[AsyncMasker()])
        return app, asyncio.run(app.ainvoke(inputs, config))
    app = graph.compile(saver=saver)
    if mode == "stream_events":
        for event in app.stream_events(inputs, config):
            mask(event)
        return app, None

    async def read() -> None:
        async for event in app.astream_events(inputs, config):
            mask(event)

    asyncio.run(read())
    return app, None


MODES = ["listener", "alistener", "aon_event", "stream_events", "astream_events"]


@pytest.mark.parametrize("mode", MODES)
def test_changing_an_events_payload_changes_nothing_of_the_run(mode: str) -> None:
    seen: list[Any] = []
    inputs = {"tags": ["t"]}
    config = {"thread_id": "masked"}
    app, result = _invoke(mode, _graph(seen), inputs, config)
    assert inputs == {"tags": ["t"]}  # the caller's own input
    assert seen == [{k: v for k, v in EXPECTED.items() if k != "used"}]  # the next node's view
    assert app.get_state(config).values == EXPECTED  # the checkpoint
    if result is not None:
        assert result == EXPECTED  # what invoke returned


def test_an_event_holds_the_payload_as_it_was_when_it_was_emitted() -> None:
    """A stream's reader (and an async listener) reads an event after the run went on: it sees
    what was emitted, not what the node did to its object afterwards."""

    def node(state: Any) -> dict[str, Any]:
        progress = {"done": [1]}
        emit(progress)
        progress["done"].append(2)
        emit(progress)
        return {"x": 1}

    graph = StateGraph().add_node("n", node).add_edge(START, "n").add_edge("n", END)
    app = graph.compile()
    assert [e.data for e in app.stream_events({}) if isinstance(e, CustomEvent)] == [
        {"done": [1]},
        {"done": [1, 2]},
    ]


def test_commands_and_interrupts_in_events_are_copies_too(saver: Any) -> None:
    def route(state: Any) -> Command:
        return Command(update={"log": ["routed"]}, goto="ask")

    def ask(state: Any) -> dict[str, Any]:
        return {"answer": interrupt({"question": ["why?"]})}

    def meddle(event: RunEvent) -> None:
        if isinstance(event, NodeEnd) and isinstance(event.update, Command):
            assert event.update.update is not None
            event.update.update["log"].append("meddled")  # type: ignore[index]
        elif isinstance(event, InterruptEvent):
            event.interrupt.value["question"].append("meddled")
        elif isinstance(event, RunStart) and isinstance(event.input, Command):
            event.input.resume["why"].append("meddled")

    class Meddler:
        def on_event(self, event: RunEvent) -> None:
            meddle(event)

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("route", route, destinations=["ask"]).add_node("ask", ask)
    graph.add_edge(START, "route").add_edge("ask", END)
    app = graph.compile(saver=saver, listeners=[Meddler()])
    config = {"thread_id": "cmd"}
    app.invoke({"log": []}, config)
    snapshot = app.get_state(config)
    assert snapshot.values == {"log": ["routed"]}
    assert snapshot.interrupts[0].value == {"question": ["why?"]}
    resume = {"why": ["because"]}
    assert app.invoke(Command(resume=resume), config)["answer"] == {"why": ["because"]}
    assert resume == {"why": ["because"]}
