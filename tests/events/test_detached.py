"""``detached``: the copies an event holds of what the run gave it."""

from __future__ import annotations

import enum
from collections import Counter, OrderedDict, defaultdict, namedtuple
from typing import Any

from graph_agent import AssistantMessage, Command, Send, UserMessage
from graph_agent.events._detached import detached
from graph_agent.graph.state import OverAllState
from graph_agent.graph.types import Interrupt


def test_every_dict_list_and_set_is_copied_and_the_rest_shared() -> None:
    message = UserMessage("hi")
    value = {"a": [1, {"b": {2}}], "t": (1, [2]), "m": message, "s": "x"}
    copied = detached(value)
    assert copied == value
    assert copied is not value and copied["a"] is not value["a"]
    assert copied["a"][1] is not value["a"][1] and copied["a"][1]["b"] is not value["a"][1]["b"]
    assert copied["t"] is not value["t"] and copied["t"][1] is not value["t"][1]
    assert copied["m"] is message  # frozen: shared
    conversation = (message, AssistantMessage("hello"), "text", 3, None)
    assert detached(conversation) is conversation  # nothing in it can change


def test_subclasses_keep_their_class() -> None:
    ordered = OrderedDict(a=[1])
    assert type(detached(ordered)) is OrderedDict and detached(ordered)["a"] is not ordered["a"]
    factory = defaultdict(list, a=[1])
    copied: Any = detached(factory)
    assert copied.default_factory is list and copied["a"] is not factory["a"]
    assert detached(Counter(a=2)) == Counter(a=2)
    Point = namedtuple("Point", "x y")
    point = Point([1], 2)
    assert type(detached(point)) is Point and detached(point).x is not point.x
    sealed = Point(1, 2)
    assert detached(sealed) is sealed

    class Colour(enum.Enum):
        RED = [1]  # an enum member is shared, whatever its value

    assert detached(Colour.RED) is Colour.RED


def test_the_graphs_own_values_are_copied_inside() -> None:
    command = Command(update={"a": [1]}, goto=[Send("n", {"k": [1]})])
    copied = detached(command)
    assert copied.update == {"a": [1]} and copied.update is not command.update
    assert copied.goto[0].node == "n" and copied.goto[0].arg is not command.goto[0].arg
    assert not copied.has_resume and detached(Command(resume=[1])).resume == [1]
    paused = Interrupt("id", "n", "during", {"q": [1]})
    assert detached(paused) == paused and detached(paused).value is not paused.value
    plain = Interrupt("id", "n", "during", "why?")
    assert detached(plain) is plain
    state = OverAllState({"a": [[1]]})
    view = detached(state)
    assert type(view) is OverAllState and view == state
    assert view._data["a"][0] is not state._data["a"][0]


def test_a_value_that_holds_itself_is_copied_too() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    copied = detached(loop)
    assert copied is not loop and copied[0] == 1
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    assert detached(deep) == deep
