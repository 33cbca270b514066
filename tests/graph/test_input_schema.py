"""``StateGraph(input_schema=...)``: what a run's new input is, as JSON Schema for clients
(a served assistant's ``input_schema``, the web page's form), and checked at each run: a
misfit is a ``GraphUsageError`` naming each field, before anything is stored; a fitting
input is used as given; a resume is not new input."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from checkpoint import MemorySaver
from graph_agent import (
    END,
    START,
    Command,
    GraphUsageError,
    GraphValidationError,
    RunnableConfig,
    StateGraph,
    interrupt,
)


class Order(TypedDict):
    item: str
    quantity: int


class OrderInput(TypedDict):
    order: Order
    note: str


def order_graph() -> StateGraph:
    graph = StateGraph(input_schema=OrderInput)
    graph.add_node("confirm", lambda state: {"asked": interrupt(f"{state['order']['item']}?")})
    graph.add_edge(START, "confirm")
    graph.add_edge("confirm", END)
    return graph


def test_the_schema_is_json_schema_of_the_input() -> None:
    app = order_graph().compile(saver=MemorySaver())
    schema = app.input_schema
    assert schema is not None
    assert schema["type"] == "object" and schema["required"] == ["order", "note"]
    assert schema["$defs"]["Order"]["properties"]["quantity"] == {
        "title": "Quantity",
        "type": "integer",
    }
    plain = StateGraph()
    plain.add_node("a", lambda state: {})
    plain.add_edge(START, "a")
    plain.add_edge("a", END)
    assert plain.compile().input_schema is None  # any dict of state keys


def test_an_input_that_does_not_fit_names_each_field_and_stores_nothing() -> None:
    saver = MemorySaver()
    app = order_graph().compile(saver=saver, name="orders")
    config = RunnableConfig(thread_id="t")
    with pytest.raises(GraphUsageError) as caught:
        app.invoke({"order": {"item": "tea", "quantity": "many"}}, config)
    message = str(caught.value)
    assert "graph 'orders': the input does not fit its input_schema OrderInput" in message
    assert "order.quantity: Input should be a valid integer" in message
    assert "note: Field required" in message
    assert app.get_state(config) is None  # refused before the input was stored
    with pytest.raises(GraphUsageError, match="note: Field required"):
        app.check_input({"order": {"item": "tea", "quantity": 2}})


def test_a_fitting_input_is_used_as_given_and_a_resume_is_not_checked() -> None:
    app = order_graph().compile(saver=MemorySaver())
    config = RunnableConfig(thread_id="t")
    given = {"order": {"item": "tea", "quantity": "2"}, "note": "hot", "extra": 1}
    app.invoke(given, config)  # "2" fits an int (lax), and is kept as sent
    assert app.get_state(config).values["order"] == {"item": "tea", "quantity": "2"}
    assert app.get_state(config).values["extra"] == 1
    final = app.invoke(Command(resume="yes"), config)
    assert final["asked"] == "yes"
    app.check_input(given)  # fits: nothing raised


def test_a_pydantic_model_and_a_dataclass_describe_an_input_too() -> None:
    class Query(BaseModel):
        text: str

    @dataclasses.dataclass
    class Page:
        number: int = 1

    for kind, bad in ((Query, {"text": 3}), (Page, {"number": "x"})):
        graph = StateGraph(input_schema=kind)
        graph.add_node("a", lambda state: {})
        graph.add_edge(START, "a")
        graph.add_edge("a", END)
        app = graph.compile()
        assert app.input_schema is not None and app.input_schema["type"] == "object"
        with pytest.raises(GraphUsageError, match="does not fit its input_schema"):
            app.invoke(bad)


@pytest.mark.parametrize(
    ("kind", "says"),
    [
        ("OrderInput", "input_schema must be a class"),
        (int, "must describe an object of state keys"),
        (list, "must describe an object of state keys"),
    ],
)
def test_an_input_schema_that_is_no_object_is_refused_at_once(kind: object, says: str) -> None:
    with pytest.raises(GraphValidationError, match=says):
        StateGraph(input_schema=kind)
