"""ChatOptions' request fields: what is sent, checked against the openai SDK itself (its request
types, and the body it sends for the same arguments), sync and async, streamed or not."""

from __future__ import annotations

import asyncio
import json
import typing
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import completion_create_params
from pydantic import TypeAdapter

from graph_agent.chat import ChatClient
from graph_agent.models import ChatOptions, ChatResponse, Prompt, ToolCallingChatOptions
from graph_agent.models.openai import OpenAIChatModel
from graph_agent.tools.definition import ToolDefinition, ToolMetadata

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "ok"},
            "finish_reason": "stop",
        }
    ],
}
STREAM = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}'
    b"\n\ndata: [DONE]\n\n"
)
MODES = [pytest.param(False, id="sync"), pytest.param(True, id="async")]
REQUEST_FIELDS = frozenset(
    typing.get_type_hints(completion_create_params.CompletionCreateParamsStreaming)
)
NON_STREAMING = TypeAdapter(completion_create_params.CompletionCreateParamsNonStreaming)
STREAMING = TypeAdapter(completion_create_params.CompletionCreateParamsStreaming)


class Tool:
    def __init__(self, name: str) -> None:
        self.tool_definition = ToolDefinition(
            name, f"the {name} tool", '{"type": "object", "properties": {}}'
        )
        self.tool_metadata = ToolMetadata()

    def call(self, tool_input: str, tool_context: Any = None) -> str:
        return "done"

    async def acall(self, tool_input: str, tool_context: Any = None) -> str:
        return "done"


class Recorder:
    """An OpenAI-compatible endpoint that records each JSON body it receives."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        if body.get("stream"):
            return httpx.Response(
                200, content=STREAM, headers={"content-type": "text/event-stream"}
            )
        return httpx.Response(200, json=COMPLETION)


def recording_model(recorder: Recorder, **settings: Any) -> OpenAIChatModel:
    """A model whose requests (sync and async) reach ``recorder``."""
    transport = httpx.MockTransport(recorder)
    return OpenAIChatModel(
        "gpt-4o-mini",
        "https://api.example.com/v1",
        api_key="sk-test",
        http_client=httpx.Client(transport=transport),
        async_http_client=httpx.AsyncClient(transport=transport),
        **settings,
    )


def our_body(
    options: ChatOptions,
    *,
    stream: bool,
    asynchronous: bool,
    defaults: ChatOptions | None = None,
    **model_settings: Any,
) -> dict[str, Any]:
    """The body our model posts for one user message with ``options``."""
    recorder = Recorder()
    model = recording_model(recorder, default_options=defaults, **model_settings)
    prompt = Prompt("hi", options)

    async def run() -> None:
        if stream:
            ChatResponse.merge([chunk async for chunk in model.astream(prompt)])
        else:
            await model.acall(prompt)

    if asynchronous:
        asyncio.run(run())
    elif stream:
        ChatResponse.merge(list(model.stream(prompt)))
    else:
        model.call(prompt)
    return recorder.bodies[0]


def sdk_body(*, stream: bool, asynchronous: bool, **arguments: Any) -> dict[str, Any]:
    """The body the openai SDK posts for ``client.chat.completions.create(**arguments)``."""
    recorder = Recorder()
    transport = httpx.MockTransport(recorder)
    settings: dict[str, Any] = {"api_key": "sk-test", "base_url": "https://api.example.com/v1"}
    if stream:
        arguments = {**arguments, "stream": True, "stream_options": {"include_usage": True}}
    if asynchronous:

        async def run() -> None:
            client = AsyncOpenAI(**settings, http_client=httpx.AsyncClient(transport=transport))
            reply = await client.chat.completions.create(**arguments)
            if stream:
                async for _ in reply:  # type: ignore[union-attr]
                    pass

        asyncio.run(run())
    else:
        client = OpenAI(**settings, http_client=httpx.Client(transport=transport))
        reply = client.chat.completions.create(**arguments)
        if stream:
            for _ in reply:  # type: ignore[union-attr]
                pass
    return recorder.bodies[0]


def assert_valid_request(body: dict[str, Any]) -> None:
    """``body`` is a request the SDK's own types accept, with no field they do not know."""
    assert set(body) <= REQUEST_FIELDS, set(body) - REQUEST_FIELDS
    (STREAMING if body.get("stream") else NON_STREAMING).validate_python(body)


EVERY_OPTION = ToolCallingChatOptions(
    model="o4-mini",
    temperature=0.2,
    top_p=0.9,
    stop=("END", "STOP"),
    max_completion_tokens=300,
    tool_choice="lookup",
    parallel_tool_calls=False,
    reasoning_effort="low",
    seed=7,
    user="user-42",
    extra_body={"metadata": {"team": "search"}},
    tool_callbacks=(Tool("lookup"), Tool("search")),
)


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
@pytest.mark.parametrize("asynchronous", MODES)
def test_every_option_is_sent_as_the_openai_sdk_sends_it(stream: bool, asynchronous: bool) -> None:
    ours = our_body(EVERY_OPTION, stream=stream, asynchronous=asynchronous)
    assert_valid_request(ours)
    theirs = sdk_body(
        stream=stream,
        asynchronous=asynchronous,
        model="o4-mini",
        messages=[{"role": "user", "content": "hi"}],
        temperature=0.2,
        top_p=0.9,
        stop=["END", "STOP"],
        max_completion_tokens=300,
        tools=ours["tools"],
        tool_choice={"type": "function", "function": {"name": "lookup"}},
        parallel_tool_calls=False,
        reasoning_effort="low",
        seed=7,
        user="user-42",
        extra_body={"metadata": {"team": "search"}},
    )
    assert ours == theirs


@pytest.mark.parametrize(
    ("options", "sent"),
    [
        (ChatOptions(tool_choice="auto"), {"tool_choice": "auto"}),
        (ChatOptions(tool_choice="none"), {"tool_choice": "none"}),
        (ChatOptions(tool_choice="required"), {"tool_choice": "required"}),
        (
            ChatOptions(tool_choice="search"),
            {"tool_choice": {"type": "function", "function": {"name": "search"}}},
        ),
        (ChatOptions(parallel_tool_calls=True), {"parallel_tool_calls": True}),
        (ChatOptions(reasoning_effort="high"), {"reasoning_effort": "high"}),
        (ChatOptions(reasoning_effort="minimal"), {"reasoning_effort": "minimal"}),
        (ChatOptions(stop="END"), {"stop": ["END"]}),
        (ChatOptions(max_tokens=50), {"max_tokens": 50}),
        (ChatOptions(seed=0), {"seed": 0}),
        (ChatOptions(user="u"), {"user": "u"}),
    ],
)
def test_each_value_is_a_valid_request_for_the_sdk(
    options: ChatOptions, sent: dict[str, Any]
) -> None:
    tools = ToolCallingChatOptions(tool_callbacks=(Tool("lookup"), Tool("search")))
    body = our_body(tools, defaults=options, stream=False, asynchronous=False)
    assert_valid_request(body)
    assert {key: body[key] for key in sent} == sent


def test_max_completion_tokens_is_sent_instead_of_max_tokens() -> None:
    body = our_body(
        ChatOptions(max_tokens=100),
        defaults=ChatOptions(max_completion_tokens=400),
        stream=False,
        asynchronous=False,
    )
    assert body["max_completion_tokens"] == 400 and "max_tokens" not in body
    assert_valid_request(body)


def test_tool_choice_and_parallel_tool_calls_are_sent_only_with_tools() -> None:
    # OpenAI answers 400 to either of them in a request without tools.
    options = ChatOptions(tool_choice="required", parallel_tool_calls=False, seed=1)
    body = our_body(options, stream=False, asynchronous=False)
    assert body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
        "seed": 1,
    }


def test_a_tool_choice_naming_no_offered_tool_is_refused_before_sending() -> None:
    options = ToolCallingChatOptions(tool_choice="refnud", tool_callbacks=(Tool("refund"),))
    with pytest.raises(
        ValueError, match=r"tool_choice='refnud' names no offered tool \(offered: refund\)"
    ):
        our_body(options, stream=False, asynchronous=False)


def test_extra_body_is_merged_last_prompt_over_defaults_over_the_model() -> None:
    body = our_body(
        ChatOptions(temperature=0.1, extra_body={"temperature": 0.9, "n": 1}),
        defaults=ChatOptions(extra_body={"n": 3, "logprobs": True}),
        extra_body={"logprobs": False, "service_tier": "flex", "temperature": 0.5},
        stream=True,
        asynchronous=False,
    )
    # the model's extra_body is a default that options replace; the options' extra_body wins
    assert body["temperature"] == 0.9 and body["n"] == 1 and body["logprobs"] is True
    assert body["service_tier"] == "flex"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert_valid_request(body)


def test_extra_body_stream_options_keep_usage_on() -> None:
    body = our_body(
        ChatOptions(extra_body={"stream_options": {"include_obfuscation": False}}),
        stream=True,
        asynchronous=True,
    )
    assert body["stream_options"] == {"include_obfuscation": False, "include_usage": True}
    assert_valid_request(body)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"temperature": "hot"}, "ChatOptions.temperature must be a number or None; got 'hot'"),
        ({"max_tokens": 0}, "ChatOptions.max_tokens must be a positive int or None; got 0"),
        ({"max_completion_tokens": True}, "max_completion_tokens must be a positive int"),
        ({"seed": 1.5}, "ChatOptions.seed must be an int or None; got 1.5"),
        ({"tool_choice": ""}, "ChatOptions.tool_choice must be a non-empty str or None"),
        ({"reasoning_effort": 3}, "ChatOptions.reasoning_effort must be a non-empty str"),
        ({"parallel_tool_calls": "yes"}, "parallel_tool_calls must be True, False or None"),
        ({"stop": ["END", 3]}, "ChatOptions.stop must be a str, a sequence of str, or None"),
        ({"extra_body": ["n", 2]}, "extra_body must be a mapping of str keys or None"),
        (
            {"extra_body": {"messages": []}},
            "cannot set 'messages': the messages come from the Prompt",
        ),
        ({"extra_body": {"stream": True}}, r"cannot set 'stream': call stream\(\)/astream\(\)"),
    ],
)
def test_a_bad_option_is_refused_where_it_is_made(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ChatOptions(**changes)
    with pytest.raises(ValueError, match=message):
        ToolCallingChatOptions().copy(**changes)


def test_a_stop_list_is_kept_as_a_tuple() -> None:
    assert ChatOptions(stop=["a", "b"]).stop == ("a", "b")


@pytest.mark.parametrize("asynchronous", MODES)
def test_chat_client_sends_the_options_with_its_tools(asynchronous: bool) -> None:
    recorder = Recorder()
    model = recording_model(recorder)
    request = (
        ChatClient.create(model)
        .prompt("hi")
        .tools(Tool("lookup"))
        .options(ChatOptions(tool_choice="lookup", seed=3, reasoning_effort="low", user="u1"))
    )
    if asynchronous:
        asyncio.run(request.acall())
    else:
        request.call()
    body = recorder.bodies[0]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    assert (body["seed"], body["reasoning_effort"], body["user"]) == (3, "low", "u1")
    assert_valid_request(body)
