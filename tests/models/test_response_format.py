"""``ChatOptions.response_format`` on the wire: the body our model posts is the body the openai
SDK posts for the same arguments and a request its own types accept, sync and async, streamed
or not; a bad format is refused where it is made."""

from __future__ import annotations

from typing import Any

import pytest

from graph_agent.models import ChatOptions, ScriptedChatModel, ToolCallingChatOptions
from graph_agent.models.openai import OpenAIChatModel

from .test_chat_options import MODES, Tool, assert_valid_request, our_body, sdk_body

STRICT_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "Invoice",
        "schema": {
            "type": "object",
            "properties": {"number": {"type": "string"}, "total": {"type": "number"}},
            "required": ["number", "total"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
@pytest.mark.parametrize("asynchronous", MODES)
def test_a_json_schema_format_is_sent_as_the_openai_sdk_sends_it(
    stream: bool, asynchronous: bool
) -> None:
    options = ToolCallingChatOptions(
        response_format=STRICT_FORMAT, tool_callbacks=(Tool("lookup"),)
    )
    ours = our_body(options, stream=stream, asynchronous=asynchronous)
    assert_valid_request(ours)
    theirs = sdk_body(
        stream=stream,
        asynchronous=asynchronous,
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "hi"}],
        tools=ours["tools"],
        response_format=STRICT_FORMAT,
    )
    assert ours == theirs
    # with tools, and no tool_choice: the model may still call them before it answers
    assert "tool_choice" not in ours and [t["function"]["name"] for t in ours["tools"]] == [
        "lookup"
    ]


@pytest.mark.parametrize(
    "response_format",
    [
        {"type": "json_object"},
        {"type": "text"},
        {"type": "json_schema", "json_schema": {"name": "loose", "schema": {"type": "object"}}},
        {"type": "json_schema", "json_schema": {"name": "a-b_1", "strict": None}},
    ],
    ids=["json_object", "text", "not-strict", "no-schema"],
)
def test_each_format_is_a_valid_request_for_the_sdk(response_format: dict[str, Any]) -> None:
    body = our_body(ChatOptions(response_format=response_format), stream=False, asynchronous=False)
    assert_valid_request(body)
    assert body["response_format"] == response_format


def test_the_prompts_format_wins_over_the_models_default() -> None:
    body = our_body(
        ChatOptions(response_format=STRICT_FORMAT),
        defaults=ChatOptions(response_format={"type": "json_object"}),
        stream=True,
        asynchronous=False,
    )
    assert body["response_format"] == STRICT_FORMAT
    assert_valid_request(body)


def test_the_body_owns_a_copy_of_the_format() -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "n", "schema": {"enum": ("a", "b")}}}
    body = our_body(ChatOptions(response_format=fmt), stream=False, asynchronous=False)
    body["response_format"]["json_schema"]["name"] = "changed"
    assert fmt["json_schema"]["name"] == "n"
    assert body["response_format"]["json_schema"]["schema"] == {"enum": ["a", "b"]}  # JSON lists


@pytest.mark.parametrize(
    ("response_format", "message"),
    [
        ("json", "response_format must be"),
        ({"type": "yaml"}, "response_format must be"),
        ({"type": "json_schema"}, "json_schema is missing"),
        (
            {"type": "json_schema", "json_schema": {"name": "has space"}},
            "whose name is 1-64 letters",
        ),
        ({"type": "json_schema", "json_schema": {"name": "x" * 65}}, "whose name is 1-64"),
        (
            {"type": "json_schema", "json_schema": {"name": "n", "schema": "{}"}},
            "whose schema is a mapping",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "n", "strict": "yes"}},
            "whose strict is True, False or None",
        ),
    ],
)
def test_a_bad_format_is_refused_where_it_is_made(response_format: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ChatOptions(response_format=response_format)
    with pytest.raises(ValueError, match=message):
        ToolCallingChatOptions().copy(response_format=response_format)


def test_models_declare_whether_they_take_a_json_schema_format() -> None:
    assert OpenAIChatModel("m", api_key="k").supports_native_output is True
    assert (
        OpenAIChatModel("m", api_key="k", supports_native_output=False).supports_native_output
        is False
    )
    assert ScriptedChatModel([]).supports_native_output is False
    assert ScriptedChatModel([], supports_native_output=True).supports_native_output is True
