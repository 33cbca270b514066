"""Shared by the wire tests: a dict checked against the SDK's TypedDicts, a trip through
JSON, and the agents and graphs whose states and streams they convert.

What the official client expects is checked against the client itself where it says it:
``langgraph_sdk.schema``'s TypedDicts (every produced dict has their keys, with values of
their types), its SSE decoder (our bytes parse into the parts we meant) and its v2 stream
converter; and the message dicts against ``langchain_core`` (a dependency of the SDK), which
must read each of them back into the same dict.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import typing_extensions
from langgraph_sdk import schema

from checkpoint import MemorySaver
from graph_agent import (
    END,
    START,
    AssistantMessage,
    ReactAgent,
    ScriptedChatModel,
    StateGraph,
    ToolCall,
    interrupt,
    tool,
)
from hooks import HumanInTheLoopHook

# -- checking a dict against the SDK's TypedDicts ------------------------------------------

_SCHEMA_NS = vars(schema)


def conforms(value: Any, hint: Any, where: str = "$") -> None:
    """Assert ``value`` (JSON data) fits ``hint`` (a type of langgraph_sdk.schema)."""
    origin = typing.get_origin(hint)
    if hint is Any or hint is object:
        return
    if hint is None or hint is type(None):
        assert value is None, f"{where}: {value!r} is not None"
        return
    if typing_extensions.is_typeddict(hint):
        assert isinstance(value, dict), f"{where}: {type(value).__name__} is not a {hint.__name__}"
        hints = typing_extensions.get_type_hints(hint, globalns=_SCHEMA_NS, include_extras=True)
        # with postponed annotations the class cannot tell NotRequired keys: read the hints
        required = {
            k for k, sub in hints.items() if k in hint.__required_keys__ and _required(sub) is sub
        }
        missing = required - set(value)
        assert not missing, f"{where}: {hint.__name__} lacks {sorted(missing)}"
        for key, sub in hints.items():
            if key in value:
                conforms(value[key], _required(sub), f"{where}.{key}")
        return
    if origin in (typing.Union, types.UnionType):
        errors = []
        for option in typing.get_args(hint):
            try:
                conforms(value, option, where)
                return
            except AssertionError as error:
                errors.append(str(error))
        raise AssertionError(f"{where}: {value!r} fits none of {hint}: {errors}")
    if origin is typing.Literal:
        assert value in typing.get_args(hint), f"{where}: {value!r} not in {hint}"
        return
    if origin in (list, Sequence, typing.Sequence, tuple):
        assert isinstance(value, list), f"{where}: {type(value).__name__} is not a list"
        (item,) = typing.get_args(hint)[:1] or (Any,)
        for i, one in enumerate(value):
            conforms(one, item, f"{where}[{i}]")
        return
    if origin in (dict, Mapping):
        assert isinstance(value, dict), f"{where}: {type(value).__name__} is not a dict"
        args = typing.get_args(hint)
        for key, one in value.items():
            assert isinstance(key, str), f"{where}: key {key!r}"
            if args:
                conforms(one, args[1], f"{where}.{key}")
        return
    if hint is datetime:
        assert isinstance(value, str), f"{where}: {value!r} is not an ISO string"
        datetime.fromisoformat(value)
        return
    if getattr(hint, "_is_protocol", False):  # the SDK's "anything dict-like" (Input)
        assert isinstance(value, dict), f"{where}: {value!r} is not a dict"
        return
    if hint in (dict, list):
        assert isinstance(value, hint), f"{where}: {value!r} is not a {hint.__name__}"
        return
    if isinstance(hint, type):
        assert isinstance(value, hint) and not (hint is int and isinstance(value, bool)), (
            f"{where}: {value!r} is not a {hint.__name__}"
        )
        return
    raise AssertionError(f"{where}: cannot check against {hint!r}")


def _required(hint: Any) -> Any:
    """``hint`` without ``NotRequired[...]`` (itself when it has none)."""
    if typing.get_origin(hint) in (typing_extensions.NotRequired, typing_extensions.Required):
        return typing.get_args(hint)[0]
    return hint


def json_clean(value: Any) -> Any:
    """``value`` after a trip through JSON (what a client gets), checked to be plain JSON."""
    return json.loads(json.dumps(value, allow_nan=False))


# -- agents and graphs to convert ----------------------------------------------------------


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


def asks(city: str, call_id: str = "call_1", text: str = "") -> AssistantMessage:
    return AssistantMessage(
        text,
        tool_calls=(
            ToolCall(id=call_id, name="get_weather", arguments=json.dumps({"city": city})),
        ),
    )


def careful_agent() -> ReactAgent:
    return ReactAgent(
        name="careful",
        model=ScriptedChatModel([asks("Rome", text="Let me look."), "Sunny in Rome."]),
        tools=[get_weather],
        hooks=[HumanInTheLoopHook(["get_weather"])],
    )


def paused_subgraph() -> Any:
    def research(state: dict[str, Any]) -> dict[str, Any]:
        return {"notes": f"notes on {state['topic']}"}

    def check(state: dict[str, Any]) -> dict[str, Any]:
        return {"checked": interrupt("ok?")}

    child = StateGraph()
    child.add_node("research", research).add_node("check", check)
    child.add_edge(START, "research").add_edge("research", "check").add_edge("check", END)
    parent = StateGraph()
    parent.add_node("sub", child.compile()).add_node("write", lambda s: {"report": s["notes"]})
    parent.add_edge(START, "sub").add_edge("sub", "write").add_edge("write", END)
    return parent.compile(saver=MemorySaver())
