"""OpenAIChatModel over a mock transport: requests, configuration, parsing, retries, errors,
secrecy of the key, clients. No network, no API key."""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from graph_agent.errors import ModelError
from graph_agent.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from graph_agent.models import (
    ChatModel,
    ChatOptions,
    ChatResponse,
    Prompt,
    ToolCallingChatOptions,
    Usage,
)
from graph_agent.models.openai import OpenAIChatModel
from graph_agent.tools.definition import ToolDefinition, ToolMetadata

KEY = "sk-test-0123456789abcdef"
ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPH_AGENT_MODEL")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


class WeatherTool:
    """A minimal ToolCallback."""

    tool_definition = ToolDefinition(
        "get_weather",
        "Current weather for a city",
        '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}',
    )
    tool_metadata = ToolMetadata()

    def call(self, tool_input: str, tool_context: Any = None) -> str:
        return "sunny"

    async def acall(self, tool_input: str, tool_context: Any = None) -> str:
        return "sunny"


def completion(
    content: str | None = "Hello!", tool_calls: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21},
        **extra,
    }


STREAM = (
    b'data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)

Reply = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


class Server:
    """Plays ``replies`` in order (the last one repeats) and records the requests."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies) or [httpx.Response(200, json=completion())]
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        return reply(request) if callable(reply) else reply

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]


def make(server: Server, **kwargs: Any) -> tuple[OpenAIChatModel, list[float]]:
    """A model talking to ``server`` (both clients), and the list of its retry waits."""
    waits: list[float] = []

    async def async_sleep(seconds: float) -> None:
        waits.append(seconds)

    transport = httpx.MockTransport(server)
    kwargs.setdefault("api_key", KEY)
    model = OpenAIChatModel(
        kwargs.pop("model", "gpt-4o-mini"),
        kwargs.pop("base_url", "https://api.example.com/v1/"),
        http_client=httpx.Client(transport=transport),
        async_http_client=httpx.AsyncClient(transport=transport),
        sleep=waits.append,
        async_sleep=async_sleep,
        **kwargs,
    )
    return model, waits


def both(model: OpenAIChatModel, prompt: Prompt | str = "hi", *, asynchronous: bool) -> Any:
    prompt = Prompt(prompt) if isinstance(prompt, str) else prompt
    return asyncio.run(model.acall(prompt)) if asynchronous else model.call(prompt)


MODES = [pytest.param(False, id="sync"), pytest.param(True, id="async")]


# --- requests ----------------------------------------------------------------------------


def conversation() -> list[Any]:
    return [
        SystemMessage("You are terse."),
        UserMessage("Weather in Paris and Rome?"),
        AssistantMessage(
            text="",
            tool_calls=(
                ToolCall(id="c1", name="get_weather", arguments='{"city": "Paris"}'),
                ToolCall(id="c2", name="get_weather", arguments=""),
            ),
        ),
        ToolResponseMessage(
            responses=(
                ToolResponse(id="c1", name="get_weather", response_data="sunny"),
                ToolResponse(id="c2", name="get_weather", response_data="rain"),
            )
        ),
        AssistantMessage(text="Paris: sunny. Rome: rain."),
    ]


@pytest.mark.parametrize("asynchronous", MODES)
def test_request_body_shape(asynchronous: bool) -> None:
    server = Server()
    model, _ = make(server)
    options = ToolCallingChatOptions(
        model="qwen-plus",
        temperature=0.2,
        max_tokens=100,
        top_p=0.9,
        stop=("END",),
        tool_callbacks=(WeatherTool(),),
        tool_names=("resolved_by_the_caller",),
        parallel_tool_calls=False,
    )
    both(model, Prompt(conversation(), options), asynchronous=asynchronous)
    request = server.requests[0]
    assert (request.method, str(request.url)) == (
        "POST",
        "https://api.example.com/v1/chat/completions",
    )
    assert request.headers["content-type"] == "application/json"
    assert server.bodies[0] == {
        "model": "qwen-plus",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "c2", "content": "rain"},
            {"role": "assistant", "content": "Paris: sunny. Rome: rain."},
        ],
        "temperature": 0.2,
        "max_tokens": 100,
        "top_p": 0.9,
        "stop": ["END"],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                },
            }
        ],
        "parallel_tool_calls": False,
    }


@pytest.mark.parametrize("asynchronous", MODES)
def test_stream_request_flags(asynchronous: bool) -> None:
    server = Server(
        httpx.Response(200, content=STREAM, headers={"content-type": "text/event-stream"})
    )
    model, _ = make(server)

    async def run() -> list[ChatResponse]:
        return [c async for c in model.astream(Prompt("hi"))]

    chunks = asyncio.run(run()) if asynchronous else list(model.stream(Prompt("hi")))
    assert ChatResponse.merge(chunks).text == "Hi"
    body = server.bodies[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert server.requests[0].headers["accept"] == "text/event-stream"


def test_unset_options_and_tool_flags_are_left_out() -> None:
    server = Server()
    model, _ = make(server)
    model.call(Prompt("hi", ToolCallingChatOptions(parallel_tool_calls=True)))
    assert server.bodies[0] == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}],
    }


def test_default_options_fill_what_the_prompt_leaves_unset() -> None:
    server = Server()
    defaults = ToolCallingChatOptions(
        model="llama3.1", temperature=0.0, max_tokens=50, tool_callbacks=(WeatherTool(),)
    )
    model, _ = make(server, model=None, default_options=defaults, extra_body={"seed": 7})
    assert model.model == "llama3.1"
    model.call(Prompt("hi", ChatOptions(temperature=0.7)))
    body = server.bodies[0]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("llama3.1", 0.7, 50)
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert body["seed"] == 7


def test_extra_body_cannot_replace_the_messages() -> None:
    server = Server()
    model, _ = make(server, extra_body={"messages": [], "stream": True})
    model.call(Prompt("hi"))
    assert server.bodies[0]["messages"] == [{"role": "user", "content": "hi"}]
    assert "stream" not in server.bodies[0]


def test_tool_with_a_schema_that_is_not_json_fails_before_sending() -> None:
    class Broken(WeatherTool):
        tool_definition = ToolDefinition("broken", "d", "{not json")

    server = Server()
    model, _ = make(server)
    with pytest.raises(ValueError, match="'broken' has an input_schema that is not JSON"):
        model.call(Prompt("hi", ToolCallingChatOptions(tool_callbacks=(Broken(),))))
    with pytest.raises(ValueError):
        model.stream(Prompt("hi", ToolCallingChatOptions(tool_callbacks=(Broken(),))))
    assert server.requests == []


# --- configuration -----------------------------------------------------------------------


@pytest.mark.parametrize("asynchronous", MODES)
def test_authorization_header_present_with_a_key(asynchronous: bool) -> None:
    server = Server()
    model, _ = make(server, extra_headers={"X-DashScope-SSE": "enable"})
    both(model, asynchronous=asynchronous)
    headers = server.requests[0].headers
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["x-dashscope-sse"] == "enable"


@pytest.mark.parametrize("asynchronous", MODES)
def test_no_authorization_header_without_a_key(asynchronous: bool) -> None:
    server = Server()
    model, _ = make(server, api_key=None)
    both(model, asynchronous=asynchronous)
    assert "authorization" not in server.requests[0].headers


def test_configuration_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1/")
    monkeypatch.setenv("GRAPH_AGENT_MODEL", "qwen2.5:7b")
    server = Server()
    model = OpenAIChatModel(http_client=httpx.Client(transport=httpx.MockTransport(server)))
    assert (model.model, model.base_url) == ("qwen2.5:7b", "http://localhost:11434/v1")
    model.call(Prompt("hi"))
    assert str(server.requests[0].url) == "http://localhost:11434/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert server.bodies[0]["model"] == "qwen2.5:7b"
    other = Server()
    explicit = OpenAIChatModel(
        "gpt-4o",
        "https://other/v1",
        "sk-other",
        http_client=httpx.Client(transport=httpx.MockTransport(other)),
    )
    assert (explicit.model, explicit.base_url) == ("gpt-4o", "https://other/v1")
    explicit.call(Prompt("hi"))
    assert other.requests[0].headers["authorization"] == "Bearer sk-other"


def test_defaults_without_environment() -> None:
    model = OpenAIChatModel()
    assert (model.model, model.base_url) == ("gpt-4o-mini", "https://api.openai.com/v1")
    assert model.url == "https://api.openai.com/v1/chat/completions"
    assert "Authorization" not in model._headers(False)
    assert isinstance(model, ChatModel)


def test_invalid_max_retries() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        OpenAIChatModel(max_retries=-1)


@pytest.mark.parametrize("settings", [{"backoff": -0.5}, {"max_backoff": -1.0}])
def test_invalid_backoff(settings: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="backoff and max_backoff must be 0 or more"):
        OpenAIChatModel(**settings)


# --- plain responses ---------------------------------------------------------------------


@pytest.mark.parametrize("asynchronous", MODES)
def test_text_answer(asynchronous: bool) -> None:
    model, _ = make(Server(httpx.Response(200, json=completion("Hello!"))))
    response = both(model, asynchronous=asynchronous)
    assert response.text == "Hello!"
    assert response.result.finish_reason == "stop"
    assert not response.has_tool_calls()
    assert response.metadata.id == "chatcmpl-123"
    assert response.metadata.model == "gpt-4o-mini-2024-07-18"
    assert response.metadata.usage == Usage(9, 12, 21)


@pytest.mark.parametrize("asynchronous", MODES)
def test_tool_call_answer(asynchronous: bool) -> None:
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
        },
        {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": ""}},
        {"id": "call_3", "type": "function", "function": {"name": "obj", "arguments": {"a": 1}}},
    ]
    model, _ = make(Server(httpx.Response(200, json=completion(None, calls))))
    response = both(model, asynchronous=asynchronous)
    assert response.has_tool_calls() and response.text == ""
    assert response.result.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments, c.index) for c in response.result.output.tool_calls] == [
        ("call_1", "get_weather", '{"city":"Paris"}', 0),
        ("call_2", "now", "{}", 1),
        ("call_3", "obj", '{"a": 1}', 2),
    ]


def test_missing_and_odd_fields_do_not_crash() -> None:
    body = {
        "choices": [
            {
                "message": {
                    "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"text": "b"}],
                    "tool_calls": [None, {"function": None}, "junk"],
                }
            }
        ],
        "usage": {"prompt_tokens": 2, "completion_tokens": 3},
        "id": 7,
    }
    model, _ = make(Server(httpx.Response(200, json=body)))
    response = model.call(Prompt("hi"))
    assert response.text == "ab"
    assert [(c.id, c.name, c.arguments) for c in response.result.output.tool_calls] == [
        ("", "", "{}")
    ]
    assert response.result.finish_reason is None
    assert response.metadata.usage == Usage(2, 3, 5)
    assert response.metadata.id is None


# --- errors ------------------------------------------------------------------------------

OPENAI_401 = {
    "error": {
        "message": "Incorrect API key provided: sk-test-***cdef. You can find your API key at https://platform.openai.com/account/api-keys.",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
}


@pytest.mark.parametrize("asynchronous", MODES)
@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (401, OPENAI_401, "Incorrect API key provided: sk-test-***cdef."),
        (
            400,
            {"error": {"message": "Invalid 'messages[1].role'", "type": "invalid_request_error"}},
            "Invalid 'messages[1].role' (invalid_request_error)",
        ),
        (
            404,
            {"error": "model 'llama9' not found, try pulling it first"},
            "model 'llama9' not found",
        ),
        (
            422,
            {"object": "error", "message": "max_tokens is too large", "code": 400},
            "max_tokens is too large",
        ),
    ],
)
def test_non_retryable_errors_raise_at_once(
    status: int, body: Any, message: str, asynchronous: bool
) -> None:
    server = Server(httpx.Response(status, json=body))
    model, waits = make(server)
    with pytest.raises(ModelError) as raised:
        both(model, asynchronous=asynchronous)
    error = raised.value
    assert error.status == status
    assert error.body is not None and json.loads(error.body) == body
    assert f"HTTP {status} from POST https://api.example.com/v1/chat/completions" in str(error)
    assert message in str(error)
    assert (len(server.requests), waits) == (1, [])


@pytest.mark.parametrize("asynchronous", MODES)
@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html><body>Bad gateway</body></html>", "not JSON"),
        (b'{"id": "chatcmpl-1", "choices": [{"message": {"content": "Hel', "not JSON"),
        (b'{"id": "chatcmpl-1", "object": "chat.completion"}', "no choices"),
        (b'{"choices": []}', "no choices"),
        (b'{"choices": [{"finish_reason": "stop"}]}', "no message"),
        (b"[1, 2]", "no choices"),
        (
            b'{"error": {"message": "quota exceeded", "code": "Throttling"}}',
            "quota exceeded (Throttling)",
        ),
    ],
    ids=["html", "truncated", "no-choices", "empty-choices", "no-message", "array", "error-200"],
)
def test_bodies_that_are_not_completions_raise(
    body: bytes, reason: str, asynchronous: bool
) -> None:
    model, _ = make(Server(httpx.Response(200, content=body)))
    with pytest.raises(ModelError, match=re.escape(reason)) as raised:
        both(model, asynchronous=asynchronous)
    assert (raised.value.status, raised.value.body) == (200, body.decode())


def test_long_error_bodies_are_truncated() -> None:
    page = "<html>" + "x" * 10_000 + "</html>"
    model, _ = make(Server(httpx.Response(502, text=page)), max_retries=0)
    with pytest.raises(ModelError) as raised:
        model.call(Prompt("hi"))
    body = raised.value.body
    assert body is not None and body.startswith("<html>xxx")
    assert 2048 <= len(body) < 2100 and body.endswith("more characters]")
    assert raised.value.status == 502


# --- retries -----------------------------------------------------------------------------


@pytest.mark.parametrize("asynchronous", MODES)
def test_retries_429_500_and_connection_errors_then_succeeds(asynchronous: bool) -> None:
    server = Server(
        httpx.Response(429, json={"error": {"message": "Rate limit reached"}}),
        httpx.Response(500, text="oops"),
        httpx.ConnectError("connection refused"),
        httpx.ReadTimeout("timed out"),
        httpx.Response(200, json=completion("finally")),
    )
    model, waits = make(server, max_retries=4, backoff=0.5, max_backoff=30.0)
    assert both(model, asynchronous=asynchronous).text == "finally"
    assert len(server.requests) == 5 and len(waits) == 4
    for attempt, wait in enumerate(waits):  # exponential, with up to 25% jitter
        assert 0.5 * 2**attempt <= wait <= 0.5 * 2**attempt * 1.25


@pytest.mark.parametrize("asynchronous", MODES)
def test_retry_after_is_honoured_and_capped(asynchronous: bool) -> None:
    server = Server(
        httpx.Response(429, headers={"retry-after": "3"}),
        httpx.Response(503, headers={"retry-after-ms": "250"}),
        httpx.Response(429, headers={"retry-after": "3600"}),
        httpx.Response(429, headers={"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}),
        httpx.Response(200, json=completion()),
    )
    model, waits = make(server, max_retries=4, max_backoff=20.0)
    both(model, asynchronous=asynchronous)
    assert waits == [3.0, 0.25, 20.0, 0.0]  # a date in the past means now


@pytest.mark.parametrize("asynchronous", MODES)
def test_retries_run_out(asynchronous: bool) -> None:
    server = Server(httpx.Response(503, json={"error": {"message": "overloaded"}}))
    model, waits = make(server, max_retries=2)
    with pytest.raises(ModelError) as raised:
        both(model, asynchronous=asynchronous)
    assert len(server.requests) == 3 and len(waits) == 2
    assert raised.value.status == 503
    assert "HTTP 503" in str(raised.value) and "(after 3 attempts)" in str(raised.value)
    assert "overloaded" in str(raised.value)


@pytest.mark.parametrize("asynchronous", MODES)
def test_connection_errors_run_out(asynchronous: bool) -> None:
    server = Server(httpx.ConnectError("[Errno 111] Connection refused"))
    model, waits = make(server, max_retries=1)
    with pytest.raises(ModelError) as raised:
        both(model, asynchronous=asynchronous)
    assert len(server.requests) == 2 and len(waits) == 1
    assert raised.value.status is None
    assert "failed (after 2 attempts): ConnectError: [Errno 111] Connection refused" in str(
        raised.value
    )
    assert isinstance(raised.value.__cause__, httpx.ConnectError)


def test_no_retries_when_max_retries_is_zero() -> None:
    server = Server(httpx.Response(429))
    model, waits = make(server, max_retries=0)
    with pytest.raises(ModelError, match="HTTP 429"):
        model.call(Prompt("hi"))
    assert (len(server.requests), waits) == (1, [])


def test_sync_and_async_requests_retry_alike() -> None:
    """One retry loop under both drivers: the same requests, the same (jittered) waits for
    the same random draws, the same final error."""
    seen = []
    for asynchronous in (False, True):
        server = Server(
            httpx.Response(503),
            httpx.ConnectError("refused"),
            httpx.Response(429, headers={"retry-after": "1.5"}),
            httpx.ReadTimeout("slow"),
            httpx.Response(502, text="bad gateway"),
        )
        model, waits = make(server, max_retries=4, backoff=0.5, max_backoff=3.0)
        random.seed(11)
        with pytest.raises(ModelError) as raised:
            both(model, asynchronous=asynchronous)
        seen.append((len(server.requests), waits, str(raised.value), raised.value.status))
    assert seen[0] == seen[1]
    assert seen[0][0] == 5 and seen[0][1][2] == 1.5 and seen[0][1][3] == 3.0  # capped
    assert "HTTP 502" in seen[0][2] and "(after 5 attempts)" in seen[0][2]


@pytest.mark.parametrize("asynchronous", MODES)
def test_a_refused_answer_raises_a_model_error_of_its_own(asynchronous: bool) -> None:
    """The error of an answer that is not retried is raised on its own (no other exception
    as its cause or context, as before the retry loop was shared)."""
    model, waits = make(Server(httpx.Response(503), httpx.Response(400)), max_retries=2)
    with pytest.raises(ModelError) as raised:
        both(model, asynchronous=asynchronous)
    assert raised.value.status == 400 and len(waits) == 1
    assert raised.value.__cause__ is None and raised.value.__context__ is None


@pytest.mark.parametrize("asynchronous", MODES)
def test_an_http_error_that_is_no_connection_failure_is_not_retried(asynchronous: bool) -> None:
    server = Server(httpx.TooManyRedirects("loop"), httpx.Response(200, json=completion()))
    model, waits = make(server, max_retries=3)
    with pytest.raises(ModelError, match="failed: TooManyRedirects: loop") as raised:
        both(model, asynchronous=asynchronous)
    assert (len(server.requests), waits) == (1, [])
    assert isinstance(raised.value.__cause__, httpx.TooManyRedirects)


@pytest.mark.parametrize("asynchronous", MODES)
def test_stream_is_retried_before_its_body_is_read(asynchronous: bool) -> None:
    sse = httpx.Response(200, content=STREAM, headers={"content-type": "text/event-stream"})
    server = Server(httpx.Response(429), httpx.ConnectError("refused"), sse)
    model, waits = make(server)

    async def run() -> list[ChatResponse]:
        return [c async for c in model.astream(Prompt("hi"))]

    chunks = asyncio.run(run()) if asynchronous else list(model.stream(Prompt("hi")))
    assert ChatResponse.merge(chunks).text == "Hi"
    assert len(server.requests) == 3 and len(waits) == 2


@pytest.mark.parametrize("asynchronous", MODES)
def test_stream_http_error_carries_the_body(asynchronous: bool) -> None:
    server = Server(httpx.Response(401, json=OPENAI_401))
    model, _ = make(server)

    async def run() -> None:
        async for _ in model.astream(Prompt("hi")):
            pass

    with pytest.raises(ModelError) as raised:
        asyncio.run(run()) if asynchronous else list(model.stream(Prompt("hi")))
    assert raised.value.status == 401 and "Incorrect API key provided" in str(raised.value)
    assert raised.value.body is not None and json.loads(raised.value.body) == OPENAI_401


# --- the key stays secret ----------------------------------------------------------------


def test_key_is_not_in_repr() -> None:
    model = OpenAIChatModel("gpt-4o", "https://dashscope.aliyuncs.com/compatible-mode/v1", KEY)
    assert repr(model) == (
        "OpenAIChatModel(model='gpt-4o', base_url='https://dashscope.aliyuncs.com/compatible-mode/v1')"
    )
    assert KEY not in repr(model) and KEY not in str(model)


@pytest.mark.parametrize("asynchronous", MODES)
def test_key_echoed_by_the_server_is_masked_in_errors_and_logs(
    asynchronous: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}.", "code": "invalid_api_key"}}
    server = Server(
        httpx.Response(500, text=f"upstream rejected Bearer {KEY}"),
        httpx.ConnectError(f"proxy refused Authorization: Bearer {KEY}"),
        httpx.Response(401, json=echo),
    )
    model, _ = make(server)
    with pytest.raises(ModelError) as raised:
        both(model, asynchronous=asynchronous)
    error = raised.value
    assert error.status == 401
    assert "Incorrect API key provided: ***." in str(error)
    assert error.body is not None and "***" in error.body
    for text in (str(error), error.body, repr(error), caplog.text):
        assert KEY not in text
    assert "retry 1 of 2" in caplog.text and "retry 2 of 2" in caplog.text
    assert all(KEY not in record.getMessage() for record in caplog.records)


def test_key_is_masked_in_stream_events_and_transport_errors() -> None:
    event = f'data: {{"error": {{"message": "bad key {KEY}"}}}}\n\n'.encode()
    server = Server(
        httpx.Response(200, content=event, headers={"content-type": "text/event-stream"})
    )
    model, _ = make(server)
    with pytest.raises(ModelError) as raised:
        list(model.stream(Prompt("hi")))
    assert KEY not in str(raised.value) and KEY not in (raised.value.body or "")
    assert "bad key ***" in str(raised.value)

    model, _ = make(Server(httpx.ConnectError(f"refused {KEY}")), max_retries=0)
    with pytest.raises(ModelError) as raised:
        model.call(Prompt("hi"))
    assert KEY not in str(raised.value) and "refused ***" in str(raised.value)


# --- clients -----------------------------------------------------------------------------


def test_injected_clients_are_reused_and_never_closed() -> None:
    server = Server()
    client = httpx.Client(transport=httpx.MockTransport(server))
    model = OpenAIChatModel(http_client=client)
    model.call(Prompt("a"))
    model.call(Prompt("b"))
    assert model.http_client is client and len(server.requests) == 2
    with model:
        pass
    model.close()
    assert not client.is_closed
    client.close()


@pytest.fixture
def created(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Make the model's own clients talk to a mock server; record every client created."""
    made: dict[str, list[Any]] = {"sync": [], "async": []}
    transport = httpx.MockTransport(Server())
    real_client, real_async_client = httpx.Client, httpx.AsyncClient

    def client(**kwargs: Any) -> httpx.Client:
        made["sync"].append(real_client(transport=transport, **kwargs))
        return made["sync"][-1]

    def async_client(**kwargs: Any) -> httpx.AsyncClient:
        made["async"].append(real_async_client(transport=transport, **kwargs))
        return made["async"][-1]

    monkeypatch.setattr(httpx, "Client", client)
    monkeypatch.setattr(httpx, "AsyncClient", async_client)
    return made


def test_own_sync_client_is_created_lazily_reused_and_closed(created: dict[str, list[Any]]) -> None:
    model = OpenAIChatModel(timeout=5.0)
    assert created["sync"] == []  # nothing until the first call
    model.call(Prompt("a"))
    model.call(Prompt("b"))
    assert len(created["sync"]) == 1 and model.http_client is created["sync"][0]
    assert created["sync"][0].timeout == httpx.Timeout(5.0)
    model.close()
    assert created["sync"][0].is_closed
    model.call(Prompt("c"))  # a closed model opens a new client when used again
    assert len(created["sync"]) == 2
    with model:
        pass
    assert created["sync"][1].is_closed


def test_own_async_client_is_reused_within_a_loop_and_closed(created: dict[str, list[Any]]) -> None:
    async def run() -> None:
        async with OpenAIChatModel() as model:
            await model.acall(Prompt("a"))
            await model.acall(Prompt("b"))
            chunks = [c async for c in model.astream(Prompt("c"))]  # a JSON answer: 1 chunk
            assert ChatResponse.merge(chunks).text == "Hello!"
            assert len(created["async"]) == 1
        assert created["async"][0].is_closed

    asyncio.run(run())


def test_own_async_client_is_recreated_in_a_new_event_loop(created: dict[str, list[Any]]) -> None:
    model = OpenAIChatModel()
    assert asyncio.run(model.acall(Prompt("a"))).text == "Hello!"
    assert asyncio.run(model.acall(Prompt("b"))).text == "Hello!"
    assert len(created["async"]) == 2  # a connection pool cannot outlive its event loop
    asyncio.run(model.aclose())
    assert created["async"][1].is_closed


def test_aclose_closes_the_sync_client_too(created: dict[str, list[Any]]) -> None:
    model = OpenAIChatModel()
    model.call(Prompt("a"))
    asyncio.run(model.aclose())
    assert created["sync"][0].is_closed


# --- the key's secrecy -------------------------------------------------------------------


@pytest.mark.parametrize("written", [f"{KEY}\n", f"{KEY}\r\n", f"\t{KEY} ", f"{KEY}\t"])
@pytest.mark.parametrize("asynchronous", MODES)
def test_a_key_read_with_surrounding_whitespace_is_stripped(
    written: str, asynchronous: bool
) -> None:
    server = Server()
    model, _ = make(server, api_key=written)
    both(model, asynchronous=asynchronous)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    "bad, what",
    [
        ("sk-tëst-0123456789", "not ASCII"),
        ("sk-test-01234\n56789", "a space or control character"),
        ("sk-test 0123456789", "a space or control character"),
        ("\u201csk-test-0123456789\u201d", "not ASCII"),
    ],
)
def test_a_key_a_header_cannot_carry_is_a_clear_error_that_does_not_show_it(
    bad: str, what: str
) -> None:
    with pytest.raises(ModelError) as caught:
        OpenAIChatModel(api_key=bad)
    message = str(caught.value)
    assert what in message and "OPENAI_API_KEY" in message
    assert "0123456789" not in message and "56789" not in message


@pytest.mark.parametrize("asynchronous", MODES)
def test_no_frame_of_a_failed_call_holds_the_key_in_a_local(asynchronous: bool) -> None:
    """Tracebacks printed with their locals (pytest --showlocals, Sentry, rich) show
    nothing of the key."""
    server = Server(httpx.Response(400, json={"error": {"message": "bad request"}}))
    model, _ = make(server, max_retries=0)
    with pytest.raises(ModelError) as caught:
        both(model, asynchronous=asynchronous)
    frames = []
    tb = caught.value.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    assert frames
    for frame in frames:
        for name, value in frame.f_locals.items():
            shown = repr(value)
            assert KEY not in shown, f"local {name!r} of {frame.f_code.co_name} shows the key"
            if isinstance(value, dict):
                assert all(KEY not in repr(v) for v in value.values()), name
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_a_base_url_password_is_masked_in_repr_logs_and_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server(httpx.Response(401, json={"error": {"message": "no"}}))
    model, _ = make(server, base_url="https://user:hunter2@proxy.example/v1", max_retries=0)
    assert "hunter2" not in repr(model) and "***" in repr(model)
    with caplog.at_level(logging.DEBUG, logger="graph_agent"), pytest.raises(ModelError) as caught:
        model.call(Prompt("hi"))
    assert "hunter2" not in str(caught.value)
    assert "hunter2" not in caplog.text


# --- refusals ----------------------------------------------------------------------------


@pytest.mark.parametrize("asynchronous", MODES)
def test_a_refusal_is_kept_on_the_message(asynchronous: bool) -> None:
    refused = completion(None)
    refused["choices"][0]["message"]["refusal"] = "I can't help with that."
    server = Server(httpx.Response(200, json=refused))
    model, _ = make(server)
    message = both(model, asynchronous=asynchronous).result.output
    assert message.text == "" and message.refusal == "I can't help with that."
    assert message.answer == "I can't help with that."
    later = Prompt([UserMessage("hi"), message, UserMessage("why?")])
    both(model, later, asynchronous=asynchronous)
    sent = server.bodies[-1]["messages"][1]
    assert sent == {"role": "assistant", "content": "", "refusal": "I can't help with that."}


def test_refusal_deltas_are_merged() -> None:
    chunks = [
        ChatResponse.of(AssistantMessage("", refusal="I can't ")),
        ChatResponse.of(AssistantMessage("", refusal="do that.")),
    ]
    merged = ChatResponse.merge(chunks).result.output
    assert merged.refusal == "I can't do that." and merged.answer == "I can't do that."
