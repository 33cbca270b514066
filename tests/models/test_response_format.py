"""``ChatOptions.response_format`` on the wire: the body our model posts is the body the openai
SDK posts for the same arguments and a request its own types accept, sync and async, streamed
or not; a bad format is refused where it is made. The same for what a ``ReactAgent`` with an
``output_type`` sends under the ``native`` strategy (strict, not strict, a union)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from openai.lib._pydantic import to_strict_json_schema
from pydantic import BaseModel

from graph_agent import ReactAgent, tool
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


# -- what a ReactAgent with an output_type sends ----------------------------------------------------


class Line(BaseModel):
    sku: str
    quantity: int


class Order(BaseModel):
    """An order with its lines."""

    number: str
    lines: list[Line]
    note: str | None = None


class Priced(BaseModel):
    amount: float
    currency: str = "EUR"


class Refund(BaseModel):
    order: str
    amount: float


class AnswerServer:
    """An OpenAI-compatible endpoint that records each body and answers ``content``."""

    def __init__(self, content: str) -> None:
        self.content = content
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        if body.get("stream"):
            chunk = {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": self.content},
                        "finish_reason": "stop",
                    }
                ],
            }
            stream = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
            return httpx.Response(
                200, content=stream, headers={"content-type": "text/event-stream"}
            )
        completion = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": self.content},
                    "finish_reason": "stop",
                }
            ],
        }
        return httpx.Response(200, json=completion)


@tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}"


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
@pytest.mark.parametrize("asynchronous", MODES)
@pytest.mark.parametrize(
    ("output_type", "content", "strict"),
    [
        (Order, '{"number": "A", "lines": [{"sku": "s", "quantity": 1}], "note": null}', True),
        (Priced, '{"amount": 2, "currency": "USD"}', False),
        (Order | Refund, '{"result": {"order": "A", "amount": 1}}', True),
    ],
    ids=["strict", "not-strict", "union"],
)
def test_an_agents_native_request_is_one_the_sdk_sends_and_accepts(
    stream: bool, asynchronous: bool, output_type: Any, content: str, strict: bool
) -> None:
    server = AnswerServer(content)
    transport = httpx.MockTransport(server)
    with OpenAIChatModel(
        "gpt-4o-mini",
        "https://api.example.com/v1",
        api_key="sk-test",
        http_client=httpx.Client(transport=transport),
        async_http_client=httpx.AsyncClient(transport=transport),
    ) as model:
        agent = ReactAgent(name="a", model=model, tools=[lookup], output_type=output_type)
        if stream:  # stream_messages makes the model stream
            if asynchronous:

                async def consume() -> None:
                    async for _ in agent.astream_messages("hi"):
                        pass

                asyncio.run(consume())
            else:
                list(agent.stream_messages("hi"))
        elif asynchronous:
            asyncio.run(agent.acall("hi"))
        else:
            agent.call("hi")
    body = server.bodies[0]
    assert_valid_request(body)
    spec = agent.output_spec
    assert spec is not None and spec.strategy == "native" and spec.strict is strict
    assert body["response_format"] == spec.response_format
    assert body["response_format"]["json_schema"]["strict"] is strict
    assert [t["function"]["name"] for t in body["tools"]] == ["lookup"]
    assert "tool_choice" not in body
    theirs = sdk_body(
        stream=stream,
        asynchronous=asynchronous,
        model="gpt-4o-mini",
        messages=body["messages"],
        tools=body["tools"],
        response_format=body["response_format"],
    )
    assert body == theirs
    if strict and output_type is Order:  # the schema the SDK's own helper makes (its parse())
        assert body["response_format"]["json_schema"]["schema"] == to_strict_json_schema(Order)
