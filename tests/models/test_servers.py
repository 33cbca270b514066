"""The servers of docs/models.md's "Servers we test against" table, replayed byte for byte by
a real local HTTP server (chunked, in small pieces) and read by OpenAIChatModel, sync and
async. The OpenAI rows replay recorded streams; the others replay what each server sends, as
its documentation and bug reports show it."""

from __future__ import annotations

import asyncio
import dataclasses
import http.server
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from graph_agent.errors import ModelError
from graph_agent.models import ChatOptions, ChatResponse, Prompt, ToolCallingChatOptions
from graph_agent.models.openai import OpenAIChatModel
from graph_agent.tools.definition import ToolDefinition, ToolMetadata

from ._recorded import FIXTURES

KEY = "sk-test-0123456789"
Check = Callable[["Request"], "tuple[int, dict[str, Any]] | Reply | None"]


@dataclasses.dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclasses.dataclass
class Reply:
    """What the server answers: ``body`` sent in ``piece``-byte chunks. With ``stall``, the
    server sends nothing more for that many seconds once ``stall_after`` bytes are out
    (nothing, or ``keep_alive`` every 50 ms), then the rest."""

    body: bytes
    content_type: str = "text/event-stream"
    status: int = 200
    piece: int = 7
    check: Check | None = None  # a request rule: an error answer (or Reply), None to go on
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    stall: float = 0.0
    stall_after: int = 0
    keep_alive: bytes = b""


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (it stops reading a stream it has failed) is no error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Replayer:
    """A real HTTP server on a free loopback port answering every POST with ``reply``."""

    def __init__(self) -> None:
        self.reply = Reply(b"")
        self.requests: list[Request] = []
        self.closing = threading.Event()
        replayer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                request = Request(self.path, dict(self.headers.items()), json.loads(raw))
                replayer.requests.append(request)
                reply = replayer.reply
                refused = reply.check(request) if reply.check else None
                if isinstance(refused, Reply):
                    reply = refused
                elif refused is not None:
                    status, error = refused
                    reply = Reply(json.dumps(error).encode(), "application/json", status)
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                body, stalled = reply.body, not reply.stall
                try:
                    for start in range(0, len(body), reply.piece):
                        if not stalled and start >= reply.stall_after:
                            self._stall(reply)
                            stalled = True
                        self._chunk(body[start : start + reply.piece])
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass  # the client gave up

            def _chunk(self, part: bytes) -> None:
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                self.wfile.flush()

            def _stall(self, reply: Reply) -> None:
                until = time.monotonic() + reply.stall
                while time.monotonic() < until and not replayer.closing.wait(0.05):
                    if reply.keep_alive:
                        self._chunk(reply.keep_alive)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        serve = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        serve.start()

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def replayer() -> Iterator[Replayer]:
    server = Replayer()
    yield server
    server.close()


def sse(*events: Any, done: bool = True, newline: str = "\n") -> bytes:
    lines = [f"data: {json.dumps(e) if not isinstance(e, str) else e}" for e in events]
    if done:
        lines.append("data: [DONE]")
    return "".join(line + newline * 2 for line in lines).encode()


def chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> dict:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": choices, **extra}


def call(index: int, id: str | None, name: str | None, args: str) -> dict[str, Any]:
    fragment: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if id is not None:
        fragment["id"] = id
        fragment["type"] = "function"
    if name is not None:
        fragment["function"]["name"] = name
    return fragment


class Tool:
    def __init__(self, name: str) -> None:
        self.tool_definition = ToolDefinition(name, name, '{"type": "object", "properties": {}}')
        self.tool_metadata = ToolMetadata()

    def call(self, tool_input: str, tool_context: Any = None) -> str:
        return "done"


def stream(model: OpenAIChatModel, prompt: Prompt, asynchronous: bool) -> tuple[list, Any]:
    """The chunks read, and the error that ended the stream (or None)."""
    got: list[ChatResponse] = []

    async def run() -> None:
        try:
            async for piece in model.astream(prompt):
                got.append(piece)
        finally:
            await model.aclose()  # its async client lives on this loop

    try:
        if asynchronous:
            asyncio.run(run())
        else:
            for piece in model.stream(prompt):
                got.append(piece)
    except ModelError as error:
        return got, error
    return got, None


MODES = [pytest.param(False, id="sync"), pytest.param(True, id="async")]


@dataclasses.dataclass
class Case:
    reply: Reply
    text: str = ""
    calls: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    refusal: str | None = None
    finish: str | None = None
    error: str | None = None  # a ModelError whose message contains this
    model: dict[str, Any] = dataclasses.field(default_factory=dict)
    path: str = "/v1/chat/completions"


def _fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def _azure_path(request: Request) -> tuple[int, dict[str, Any]] | None:
    if request.path != "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21":
        return 404, {"error": {"code": "404", "message": f"Resource not found: {request.path}"}}
    if request.headers.get("api-key") != KEY or "Authorization" in request.headers:
        return 401, {"error": {"code": "401", "message": "Access denied due to invalid key"}}
    return None


SERVERS: dict[str, Case] = {
    # a stream recorded from the OpenAI API (tests/fixtures/openai-sse/), replayed as sent
    "openai-recorded-parallel-tools": Case(
        Reply(_fixture("02-parallel-two-tools.sse")),
        calls=[
            ("GetWeatherArgs", '{"city": "Edinburgh", "country": "UK", "units": "c"}'),
            ("get_stock_price", '{"ticker": "AAPL", "exchange": "NASDAQ"}'),
        ],
        finish="tool_calls",
    ),
    "openai-refusal": Case(
        Reply(
            sse(
                chunk({"role": "assistant", "refusal": ""}),
                chunk({"refusal": "I can't "}),
                chunk({"refusal": "help with that."}),
                chunk({}, "stop"),
            )
        ),
        refusal="I can't help with that.",
        finish="stop",
    ),
    "azure-deployment-url-api-key-and-filter-results": Case(
        Reply(
            sse(
                {
                    "choices": [],
                    "created": 0,
                    "id": "",
                    "model": "",
                    "object": "",
                    "prompt_filter_results": [
                        {
                            "prompt_index": 0,
                            "content_filter_results": {
                                "hate": {"filtered": False, "severity": "safe"}
                            },
                        }
                    ],
                },
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "content": "Bon"},
                            "finish_reason": None,
                            "content_filter_results": {"hate": {"filtered": False}},
                        }
                    ],
                    "id": "c",
                    "model": "gpt-4o-2024-08-06",
                    "object": "chat.completion.chunk",
                },
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"content": "jour"},
                            "finish_reason": "stop",
                            "content_filter_results": {},
                        }
                    ],
                    "id": "c",
                    "model": "gpt-4o-2024-08-06",
                    "object": "chat.completion.chunk",
                },
            ),
            check=_azure_path,
        ),
        text="Bonjour",
        finish="stop",
        model={
            "base_url": "{url}/openai/deployments/gpt-4o?api-version=2024-10-21",
            "api_key_header": "api-key",
        },
    ),
    "azure-content-filter": Case(
        Reply(sse(chunk({"role": "assistant", "content": ""}), chunk({}, "content_filter"))),
        finish="content_filter",
    ),
    "vllm-reasoning-and-repeated-ids": Case(
        Reply(
            sse(
                chunk({"role": "assistant", "reasoning_content": "The user wants"}),
                chunk({"reasoning_content": " the weather."}),
                chunk({"tool_calls": [call(0, "chatcmpl-tool-1", "get_weather", "")]}),
                chunk({"tool_calls": [call(0, "chatcmpl-tool-1", None, '{"city": ')]}),
                chunk({"tool_calls": [call(0, "chatcmpl-tool-1", None, '"Paris"}')]}),
                chunk({}, "tool_calls"),
            )
        ),
        calls=[("get_weather", '{"city": "Paris"}')],
        finish="tool_calls",
    ),
    "vllm-error-object": Case(
        Reply(
            json.dumps(
                {
                    "object": "error",
                    "message": '"auto" tool choice requires '
                    "--enable-auto-tool-choice and --tool-call-parser to be set",
                    "type": "BadRequestError",
                    "param": None,
                    "code": 400,
                }
            ).encode(),
            "application/json",
            400,
        ),
        error='"auto" tool choice requires --enable-auto-tool-choice',
    ),
    "ollama-parallel-calls-at-index-0": Case(
        Reply(
            sse(
                chunk(
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [call(0, "call_a1", "get_weather", '{"city":"Paris"}')],
                    }
                ),
                chunk(
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [call(0, "call_b2", "get_time", '{"zone":"CET"}')],
                    }
                ),
                chunk({"role": "assistant", "content": ""}, "tool_calls"),
            )
        ),
        calls=[("get_weather", '{"city":"Paris"}'), ("get_time", '{"zone":"CET"}')],
        finish="tool_calls",
    ),
    "llama.cpp-no-arg-tool-and-error-field": Case(
        Reply(
            sse(chunk({"tool_calls": [call(0, "abc", "now", "")]}), done=False)
            + b'error: {"code": 500, "message": "context shift is disabled", '
            b'"type": "server_error"}\n\n'
        ),
        calls=[("now", "{}")],
        error="context shift is disabled",
    ),
    "llama.cpp-no-arg-tool": Case(
        Reply(sse(chunk({"tool_calls": [call(0, "abc", "now", "")]}), chunk({}, "tool_calls"))),
        calls=[("now", "{}")],
        finish="tool_calls",
    ),
    "litellm-explicit-nulls-and-usage-with-choices": Case(
        Reply(
            sse(
                chunk(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": None,
                        "function_call": None,
                        "refusal": None,
                    }
                ),
                chunk({"content": "4", "tool_calls": None, "function_call": None}),
                chunk(
                    {"content": None},
                    "stop",
                    usage={"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10},
                ),
            )
        ),
        text="4",
        finish="stop",
    ),
    "litellm-error-mid-stream": Case(
        Reply(
            sse(
                chunk({"content": "Par"}),
                {
                    "error": {
                        "message": "litellm.RateLimitError: upstream 429",
                        "type": "throttling_error",
                        "code": "429",
                    }
                },
                done=False,
            )
        ),
        text="Par",
        error="litellm.RateLimitError: upstream 429 (429)",
    ),
    "openrouter-processing-comments-and-error-chunk": Case(
        Reply(
            b": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\n"
            + sse(
                chunk({"content": "Hel"}),
                {
                    "id": "gen-1",
                    "object": "chat.completion.chunk",
                    "error": {"code": "server_error", "message": "Provider disconnected"},
                    "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
                },
                done=False,
            )
        ),
        text="Hel",
        error="Provider disconnected (server_error)",
    ),
    "dashscope-reasoning-empty-ids-and-usage-chunk": Case(
        Reply(
            sse(
                chunk({"role": "assistant", "content": None, "reasoning_content": "Weather"}),
                chunk({"content": None, "tool_calls": [call(0, "call_9d", "get_weather", "")]}),
                chunk({"tool_calls": [call(0, "", None, '{"city": "Hangzhou"}')]}),
                chunk({"content": ""}, "tool_calls"),
                chunk(
                    None, usage={"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}
                ),
            )
        ),
        calls=[("get_weather", '{"city": "Hangzhou"}')],
        finish="tool_calls",
    ),
    "proxy-cr-only-lines-and-last-event-ending-in-cr": Case(
        Reply(sse(chunk({"content": "a"}), chunk({"content": "b"}, "stop"), newline="\r")[:-1]),
        text="ab",
        finish="stop",
    ),
    "proxy-event-stream-labelled-json": Case(
        Reply(sse(chunk({"content": "ok"}, "stop")), content_type="application/json"),
        text="ok",
        finish="stop",
    ),
    "proxy-json-error-labelled-event-stream": Case(
        Reply(b'{"error": {"message": "model not found", "code": "model_not_found"}}'),
        error="model not found (model_not_found)",
    ),
    "any-several-choices-through-extra-body": Case(
        Reply(
            sse(
                {"choices": [{"index": 0, "delta": {"content": "A"}, "finish_reason": None}]},
                {"choices": [{"index": 1, "delta": {"content": "B"}, "finish_reason": None}]},
                {
                    "choices": [
                        {"index": 0, "delta": {}, "finish_reason": "stop"},
                        {"index": 1, "delta": {}, "finish_reason": "length"},
                    ]
                },
            )
        ),
        text="A",
        finish="stop",
    ),
    "broken-server-deeply-nested-json": Case(
        Reply(b"data: " + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"\n\n", piece=4096),
        error="nested too deeply",
    ),
}


@pytest.mark.parametrize("asynchronous", MODES)
@pytest.mark.parametrize("name", list(SERVERS))
def test_each_server_is_read_faithfully(replayer: Replayer, name: str, asynchronous: bool) -> None:
    case = SERVERS[name]
    replayer.reply = case.reply
    settings = dict(case.model)
    base_url = settings.pop("base_url", "{url}/v1").format(url=replayer.url)
    model = OpenAIChatModel("m", base_url, KEY, max_retries=0, **settings)
    chunks, error = stream(model, Prompt("hi"), asynchronous)
    model.close()
    if case.error is None:
        assert error is None, error
    else:
        assert error is not None and case.error in str(error), error
    if case.error is not None and not chunks:
        return
    merged = ChatResponse.merge(chunks)
    assert merged.text == case.text
    calls = [(c.name, c.arguments) for c in merged.result.output.tool_calls]
    assert calls == case.calls
    assert merged.result.output.refusal == case.refusal
    if case.error is None:
        assert merged.result.finish_reason == case.finish


# --- request rules a server enforces -------------------------------------------------------

REASONING_MODELS = ("o1", "o3", "o4-mini", "gpt-5")


def openai_rules(request: Request) -> tuple[int, dict[str, Any]] | None:
    """A few of the OpenAI API's request rules, as it answers them (HTTP 400)."""
    body = request.body

    def refuse(message: str, param: str) -> tuple[int, dict[str, Any]]:
        return 400, {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": param,
                "code": None,
            }
        }

    if body["model"].startswith(REASONING_MODELS) and "max_tokens" in body:
        return refuse(
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            "max_tokens",
        )
    for field in ("tool_choice", "parallel_tool_calls"):
        if field in body and not body.get("tools"):
            return refuse(
                f"Invalid value for '{field}': '{field}' is only allowed when "
                "'tools' are specified.",
                field,
            )
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        names = [tool["function"]["name"] for tool in body["tools"]]
        if choice["function"]["name"] not in names:
            return refuse(
                "Invalid value for 'tool_choice': no function named "
                f"'{choice['function']['name']}' was specified in the 'tools' "
                "parameter.",
                "tool_choice",
            )
    return None


ANSWER = json.dumps(
    {
        "id": "c",
        "object": "chat.completion",
        "model": "o4-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
    }
).encode()


@pytest.mark.parametrize("asynchronous", MODES)
@pytest.mark.parametrize(
    "options",
    [
        ChatOptions(max_completion_tokens=200),
        ChatOptions(max_tokens=100, max_completion_tokens=200),
        ChatOptions(tool_choice="required", parallel_tool_calls=False),  # no tools: not sent
        ToolCallingChatOptions(
            tool_choice="lookup", parallel_tool_calls=True, tool_callbacks=(Tool("lookup"),)
        ),
    ],
    ids=["max_completion_tokens", "both-limits", "tool-flags-without-tools", "named-tool"],
)
def test_options_pass_a_server_enforcing_openai_rules(
    replayer: Replayer, options: ChatOptions, asynchronous: bool
) -> None:
    replayer.reply = Reply(ANSWER, "application/json", check=openai_rules)
    model = OpenAIChatModel("o4-mini", f"{replayer.url}/v1", KEY, max_retries=0)
    prompt = Prompt("hi", options)

    async def once() -> ChatResponse:
        async with model:
            return await model.acall(prompt)

    answer = asyncio.run(once()) if asynchronous else model.call(prompt)
    model.close()
    assert answer.text == "ok"


def test_max_tokens_on_a_reasoning_model_shows_the_servers_rule(replayer: Replayer) -> None:
    replayer.reply = Reply(ANSWER, "application/json", check=openai_rules)
    model = OpenAIChatModel("o4-mini", f"{replayer.url}/v1", KEY, max_retries=0)
    with model, pytest.raises(ModelError, match="Use 'max_completion_tokens' instead"):
        model.call(Prompt("hi", ChatOptions(max_tokens=100)))


def test_a_key_in_another_header_is_kept_as_secret_as_a_bearer_key(replayer: Replayer) -> None:
    replayer.reply = Reply(
        b'{"error": {"message": "bad key ' + KEY.encode() + b'"}}', "application/json", 401
    )
    model = OpenAIChatModel(
        "gpt-4o",
        f"{replayer.url}/openai/deployments/gpt-4o?api-version=2024-10-21",
        KEY,
        api_key_header="api-key",
        max_retries=0,
    )
    assert model.url.endswith("/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21")
    with model, pytest.raises(ModelError) as caught:
        model.call(Prompt("hi"))
    assert replayer.requests[-1].headers["api-key"] == KEY
    assert (
        KEY not in str(caught.value)
        and KEY not in repr(model)
        and "bad key ***" in str(caught.value)
    )


@pytest.mark.parametrize("header", ["", "api key", "api-key:", "Authorizatión"])
def test_a_key_header_that_is_no_header_name_is_refused(header: str) -> None:
    with pytest.raises(ValueError, match="api_key_header must be an HTTP header name"):
        OpenAIChatModel(api_key=KEY, api_key_header=header)
