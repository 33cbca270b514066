"""The streaming parser of OpenAIChatModel against recorded OpenAI streams and synthetic ones.

Every ``*.sse`` file of ``tests/fixtures/openai-sse/`` goes through ``httpx.MockTransport``
byte for byte (whole, and split into tiny pieces), through ``stream`` and ``astream``, and
the merged result must reproduce ``expected.json``. The edge cases SOURCES.md lists each
have a test below (``test_edge_case_*``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from graph_agent.errors import ModelError
from graph_agent.models import ChatResponse, Prompt, Usage
from graph_agent.models._sse import SSEDecoder, iter_chunks
from graph_agent.models.openai import OpenAIChatModel

from ._recorded import FIXTURES

EXPECTED: dict[str, Any] = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
SSE_FILES = sorted(FIXTURES.glob("*.sse"))
SSE = "text/event-stream"


class Pieces(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body delivered in pieces of ``size`` bytes (all at once when ``None``),
    optionally failing with ``error`` after the last piece."""

    def __init__(self, data: bytes, size: int | None = None, error: Exception | None = None):
        self.data, self.size, self.error = data, size or max(len(data), 1), error

    def _pieces(self) -> Iterator[bytes]:
        for start in range(0, len(self.data), self.size):
            yield self.data[start : start + self.size]
        if self.error is not None:
            raise self.error

    def __iter__(self) -> Iterator[bytes]:
        yield from self._pieces()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._pieces():
            yield piece


def model_for(
    body: bytes, *, size: int | None = None, error: Exception | None = None, content_type=SSE
) -> OpenAIChatModel:
    def handler(request: httpx.Request) -> httpx.Response:
        assert json.loads(request.content)["stream"] is True
        return httpx.Response(
            200, headers={"content-type": content_type}, stream=Pieces(body, size, error)
        )

    transport = httpx.MockTransport(handler)
    return OpenAIChatModel(
        "gpt-4o",
        "http://test/v1",
        "sk-test",
        http_client=httpx.Client(transport=transport),
        async_http_client=httpx.AsyncClient(transport=transport),
    )


def stream_sync(model: OpenAIChatModel) -> list[ChatResponse]:
    return list(model.stream(Prompt("hi")))


def stream_async(model: OpenAIChatModel) -> list[ChatResponse]:
    async def run() -> list[ChatResponse]:
        return [chunk async for chunk in model.astream(Prompt("hi"))]

    return asyncio.run(run())


STREAMERS = [pytest.param(stream_sync, id="sync"), pytest.param(stream_async, id="async")]


def sse(*events: Any, done: bool = True) -> bytes:
    """A stream body: one ``data:`` event per JSON value (strings go as they are)."""
    lines = [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events]
    return ("".join(lines) + ("data: [DONE]\n\n" if done else "")).encode()


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "chatcmpl-1", "model": "m", "choices": choices, **extra}


def fragment(index: int | None, id: str | None = None, name: str | None = None, args=None):
    call: dict[str, Any] = {"function": {}}
    if index is not None:
        call["index"] = index
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    if name is not None:
        call["function"]["name"] = name
    if args is not None:
        call["function"]["arguments"] = args
    return call


def calls_of(merged: ChatResponse) -> list[tuple[Any, str, str, str]]:
    return [(c.index, c.id, c.name, c.arguments) for c in merged.result.output.tool_calls]


# --- every recorded stream reproduces expected.json --------------------------------------


def test_every_fixture_has_an_expectation() -> None:
    assert len(SSE_FILES) >= 6
    assert sorted(EXPECTED) == [path.name for path in SSE_FILES]


@pytest.mark.parametrize("streamer", STREAMERS)
@pytest.mark.parametrize("size", [None, 1, 7], ids=["whole", "1-byte", "7-bytes"])
@pytest.mark.parametrize("path", SSE_FILES, ids=lambda p: p.name)
def test_fixture_reproduces_expected_json(path: Path, size: int | None, streamer: Any) -> None:
    expected = EXPECTED[path.name]
    chunks = streamer(model_for(path.read_bytes(), size=size))
    assert len(chunks) == expected["data_events_excluding_DONE"]

    merged = ChatResponse.merge(chunks)
    calls = merged.result.output.tool_calls
    assert [c.index for c in calls] == [e["index"] for e in expected["tool_calls"]]
    for call, want in zip(calls, expected["tool_calls"], strict=True):
        assert (call.id, call.name, call.type) == (want["id"], want["name"], "function")
        assert call.arguments == want["normalized_arguments"]
        assert json.loads(call.arguments) == want["arguments_parsed"]
        raw = "".join(
            f.arguments
            for c in chunks
            for g in c.results
            for f in g.output.tool_calls
            if f.index == want["index"]
        )
        assert raw == want["arguments"]  # the fragments, before normalisation
    assert merged.result.finish_reason == expected["finish_reason"]
    usage = expected["usage"]
    assert merged.metadata.usage == Usage(
        usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]
    )
    assert merged.metadata.extra["usage"] == usage  # including the *_details
    assert merged.metadata.model == "gpt-4o-2024-08-06"
    assert merged.metadata.id and merged.metadata.id.startswith("chatcmpl-")
    assert merged.text == ""
    assert merged.has_tool_calls()


@pytest.mark.parametrize("path", SSE_FILES, ids=lambda p: p.name)
def test_sync_and_async_streams_yield_the_same_chunks(path: Path) -> None:
    body = path.read_bytes()
    assert stream_sync(model_for(body)) == stream_async(model_for(body, size=3))


def test_merged_stream_equals_the_plain_answer_of_the_same_completion() -> None:
    path = FIXTURES / "02-parallel-two-tools.sse"
    chunks = stream_sync(model_for(path.read_bytes()))
    expected = EXPECTED[path.name]
    first = json.loads(path.read_text().split("\n\n")[0].removeprefix("data: "))
    plain = {
        "id": first["id"],
        "object": "chat.completion",
        "model": first["model"],
        "system_fingerprint": first["system_fingerprint"],
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": c["arguments"]},
                        }
                        for c in expected["tool_calls"]
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": expected["usage"],
    }
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=plain))
    model = OpenAIChatModel(
        "gpt-4o", "http://test/v1", http_client=httpx.Client(transport=transport)
    )
    assert ChatResponse.merge(chunks) == model.call(Prompt("hi"))


# --- the edge cases of SOURCES.md --------------------------------------------------------


def test_edge_case_1_id_and_name_only_in_the_first_delta() -> None:
    chunks = stream_sync(model_for((FIXTURES / "01-single-tool-call.sse").read_bytes()))
    fragments = [f for c in chunks for g in c.results for f in g.output.tool_calls]
    assert fragments[0].id == "call_7PhhveOvvpPK53s1fV8TWhoV"
    assert all(f.id == "" and f.name == "" and f.index == 0 for f in fragments[1:])
    assert len(ChatResponse.merge(chunks).result.output.tool_calls) == 1


@pytest.mark.parametrize("streamer", STREAMERS)
@pytest.mark.parametrize("with_index", [True, False], ids=["with-index", "without-index"])
@pytest.mark.parametrize("continuation_id", ["", "same"], ids=["empty-id", "repeated-id"])
def test_edge_case_1_empty_or_repeated_id_continues_the_call(
    continuation_id: str, with_index: bool, streamer: Any
) -> None:
    """Compatible servers send ``"id":""`` on continuations, vLLM repeats the id."""

    def frag(index: int, id: str, name: str | None, args: str) -> dict[str, Any]:
        call = fragment(index if with_index else None, id, name, args)
        return call

    def cont(index: int, first_id: str, args: str) -> dict[str, Any]:
        return frag(index, first_id if continuation_id == "same" else "", None, args)

    body = sse(
        chunk({"role": "assistant", "tool_calls": [frag(0, "call_a", "weather", "")]}),
        chunk({"tool_calls": [cont(0, "call_a", '{"city":')]}),
        chunk({"tool_calls": [cont(0, "call_a", '"Paris"}')]}),
        chunk({"tool_calls": [frag(1, "call_b", "time", "")]}),
        chunk({"tool_calls": [cont(1, "call_b", "")]}),
        chunk({}, "tool_calls"),
        chunk(usage={"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}),
    )
    merged = ChatResponse.merge(streamer(model_for(body)))
    index = (0, 1) if with_index else (None, None)
    assert calls_of(merged) == [
        (index[0], "call_a", "weather", '{"city":"Paris"}'),
        (index[1], "call_b", "time", "{}"),
    ]
    assert merged.metadata.usage == Usage(5, 7, 12)


def test_edge_case_2_fragments_break_json_tokens_and_parse_only_when_merged() -> None:
    chunks = stream_sync(model_for((FIXTURES / "01-single-tool-call.sse").read_bytes()))
    fragments = [f.arguments for c in chunks for g in c.results for f in g.output.tool_calls]
    assert '{"' in fragments and "city" in fragments
    with pytest.raises(ValueError):
        json.loads(fragments[1])
    assert json.loads(ChatResponse.merge(chunks).result.output.tool_calls[0].arguments) == {
        "city": "Edinburgh",
        "country": "GB",
        "units": "c",
    }


@pytest.mark.parametrize(
    ("name", "first_has_tool_call"),
    [
        ("01-single-tool-call.sse", True),
        ("03-strict-tool.sse", True),
        ("04-nonstrict-tool.sse", True),
        ("02-parallel-two-tools.sse", False),
        ("05-parallel-with-noarg-tool.sse", False),
    ],
)
def test_edge_case_3_role_with_or_without_tool_call_in_the_first_chunk(
    name: str, first_has_tool_call: bool
) -> None:
    first = stream_sync(model_for((FIXTURES / name).read_bytes()))[0]
    assert first.result.output.has_tool_calls() is first_has_tool_call
    assert first.text == ""  # "content": null is no text


def test_edge_case_4_usage_only_last_chunk_and_null_usage() -> None:
    chunks = stream_sync(model_for((FIXTURES / "05-parallel-with-noarg-tool.sse").read_bytes()))
    last = chunks[-1]
    assert last.results == ()
    assert last.metadata.usage == Usage(87, 45, 132)
    assert all(c.metadata.usage is None for c in chunks[:-1])  # "usage": null
    with pytest.raises(IndexError):
        last.result  # noqa: B018


@pytest.mark.parametrize("streamer", STREAMERS)
def test_edge_case_5_interleaved_indexes(streamer: Any) -> None:
    body = sse(
        chunk({"role": "assistant", "content": None}),
        chunk({"tool_calls": [fragment(0, "call_0", "add", '{"a"'), fragment(1, "call_1", "neg")]}),
        chunk({"tool_calls": [fragment(1, args='{"x": ')]}),
        chunk({"tool_calls": [fragment(0, args=": 1, ")]}),
        chunk({"tool_calls": [fragment(1, args="3}"), fragment(0, args='"b": 2}')]}),
        chunk({}, "tool_calls"),
    )
    merged = ChatResponse.merge(streamer(model_for(body)))
    assert calls_of(merged) == [
        (0, "call_0", "add", '{"a": 1, "b": 2}'),
        (1, "call_1", "neg", '{"x": 3}'),
    ]
    assert merged.metadata.usage is None  # no usage chunk: none reported


@pytest.mark.parametrize(
    "name", ["05-parallel-with-noarg-tool.sse", "06-DERIVED-noarg-empty-args-only.sse"]
)
def test_edge_case_6_no_arg_tool_becomes_empty_object(name: str) -> None:
    merged = ChatResponse.merge(stream_sync(model_for((FIXTURES / name).read_bytes())))
    call = merged.result.output.tool_calls[0]
    assert (call.name, call.arguments, json.loads(call.arguments)) == (
        "get_current_datetime",
        "{}",
        {},
    )


def test_edge_case_6_whitespace_only_arguments_become_empty_object() -> None:
    body = sse(chunk({"tool_calls": [fragment(0, "c1", "now", "  ")]}), chunk({}, "tool_calls"))
    assert calls_of(ChatResponse.merge(stream_sync(model_for(body)))) == [(0, "c1", "now", "{}")]


# --- text answers and the SSE framing ----------------------------------------------------


@pytest.mark.parametrize("streamer", STREAMERS)
def test_text_only_answer_streams_content_deltas(streamer: Any) -> None:
    body = sse(
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Hel"}),
        chunk({"content": "lo"}),
        chunk({"content": " world"}),
        chunk({}, "stop"),
        chunk(usage={"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}),
    )
    chunks = streamer(model_for(body, size=5))
    assert [c.text for c in chunks[1:4]] == ["Hel", "lo", " world"]
    merged = ChatResponse.merge(chunks)
    assert merged.text == "Hello world"
    assert merged.result.finish_reason == "stop"
    assert not merged.has_tool_calls()
    assert merged.metadata.usage == Usage(3, 3, 6)


@pytest.mark.parametrize("streamer", STREAMERS)
@pytest.mark.parametrize("size", [None, 1, 2])
def test_crlf_comments_other_fields_and_unescaped_line_separators(streamer: Any, size: Any) -> None:
    """``\\r\\n`` and ``\\r`` end lines; U+2028 and U+0085 inside JSON text do not."""
    text = "naïve\u2028line\x85next 中文"
    event = json.dumps(chunk({"content": text}), ensure_ascii=False)
    body = (
        "\ufeff: keep-alive comment\r\n\r\n"
        "event: message\r\nid: 7\r\nretry: 100\r\n"
        f"data:{event}\r\n\r\n"
        f"data: {json.dumps(chunk({}, 'stop'))}\r\r"
        "data: [DONE]\r\n\r\n"
    ).encode()
    chunks = streamer(model_for(body, size=size))
    merged = ChatResponse.merge(chunks)
    assert merged.text == text
    assert merged.result.finish_reason == "stop"


def test_multi_line_data_is_joined_with_newlines() -> None:
    body = b'data: {"id": "x",\ndata:  "choices": []}\n\ndata: [DONE]\n\n'
    chunks = stream_sync(model_for(body))
    assert len(chunks) == 1 and chunks[0].metadata.id == "x"


def test_done_without_its_blank_line_still_ends_the_stream() -> None:
    body = sse(chunk({"content": "ok"}), done=False) + b"data: [DONE]"
    assert ChatResponse.merge(stream_sync(model_for(body))).text == "ok"


def test_decoder_holds_back_a_trailing_carriage_return() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n\r") == []  # \r\n ends the line, the \r may be half of a blank line
    assert decoder.feed(b"\ndata: b\n") == ["a"]
    assert decoder.close() == "b"  # left unfinished
    assert decoder.close() is None


def test_a_json_answer_to_a_stream_request_is_one_chunk() -> None:
    """Some servers ignore ``stream: true`` and answer with one ``chat.completion``."""
    body = json.dumps(
        {
            "id": "c",
            "model": "m",
            "choices": [{"message": {"content": "whole"}, "finish_reason": "stop"}],
        }
    ).encode()
    chunks = stream_sync(model_for(body, content_type="application/json"))
    assert [c.text for c in chunks] == ["whole"]
    assert stream_async(model_for(body, content_type="application/json"))[0].text == "whole"


# --- broken streams ----------------------------------------------------------------------


def collect(model: OpenAIChatModel, asynchronous: bool) -> tuple[list[ChatResponse], ModelError]:
    """The chunks a stream yielded before it raised, and the ``ModelError``."""
    got: list[ChatResponse] = []
    if not asynchronous:
        with pytest.raises(ModelError) as raised:
            for c in model.stream(Prompt("hi")):
                got.append(c)
        return got, raised.value

    async def run() -> None:
        async for c in model.astream(Prompt("hi")):
            got.append(c)

    with pytest.raises(ModelError) as raised:
        asyncio.run(run())
    return got, raised.value


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_stream_without_done_raises_after_yielding_the_data(asynchronous: bool) -> None:
    path = FIXTURES / "01-single-tool-call.sse"
    body = path.read_bytes().replace(b"data: [DONE]\n\n", b"")
    got, error = collect(model_for(body), asynchronous)
    assert len(got) == EXPECTED[path.name]["data_events_excluding_DONE"]
    assert "stream ended before [DONE]" in str(error)
    assert error.status == 200
    # what came is still usable, e.g. for a partial answer
    assert ChatResponse.merge(got).result.output.tool_calls[0].name == "GetWeatherArgs"


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_stream_cut_inside_an_event_raises(asynchronous: bool) -> None:
    body = sse(chunk({"content": "a"}), done=False) + b'data: {"id": "x", "choi'
    got, error = collect(model_for(body), asynchronous)
    assert [c.text for c in got] == ["a"]
    assert "stream ended before [DONE]" in str(error) and "cut off" in str(error)
    assert error.body == '{"id": "x", "choi'


def test_last_complete_event_without_blank_line_is_yielded_before_the_error() -> None:
    last = b"data: " + json.dumps(chunk({"content": "b"})).encode()  # no blank line after it
    body = sse(chunk({"content": "a"}), done=False) + last
    got, error = collect(model_for(body), False)
    assert [c.text for c in got] == ["a", "b"]
    assert "before [DONE]" in str(error)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_non_json_event_raises(asynchronous: bool) -> None:
    body = sse(chunk({"content": "a"}), "this is not json", chunk({"content": "b"}))
    got, error = collect(model_for(body), asynchronous)
    assert [c.text for c in got] == ["a"]
    assert "event 2 is not JSON" in str(error)
    assert (error.status, error.body) == (200, "this is not json")


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_error_event_raises_with_the_provider_message(asynchronous: bool) -> None:
    error_event = {"error": {"message": "The server is overloaded", "type": "server_error"}}
    got, error = collect(model_for(sse(chunk({"content": "a"}), error_event)), asynchronous)
    assert [c.text for c in got] == ["a"]
    assert "The server is overloaded (server_error)" in str(error)
    assert error.body is not None and json.loads(error.body) == error_event


def test_vllm_style_error_event_raises() -> None:
    event = {
        "object": "error",
        "message": "context too long",
        "type": "BadRequestError",
        "code": 400,
    }
    _, error = collect(model_for(sse(event)), False)
    assert "context too long" in str(error)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_connection_lost_mid_stream_raises_model_error(asynchronous: bool) -> None:
    body = sse(chunk({"content": "a"}), chunk({"content": "b"}), done=False)
    model = model_for(body, error=httpx.ReadError("connection reset"))
    got, error = collect(model, asynchronous)
    assert [c.text for c in got] == ["a", "b"]
    assert "broke off" in str(error) and "ReadError: connection reset" in str(error)
    assert isinstance(error.__cause__, httpx.ReadError)


def test_iter_chunks_redacts_error_bodies() -> None:
    body = sse("secret-key is not JSON")
    with pytest.raises(ModelError) as raised:
        list(iter_chunks([body], redact=lambda text: text.replace("secret-key", "***")))
    assert raised.value.body == "*** is not JSON"


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_empty_stream_raises(asynchronous: bool) -> None:
    got, error = collect(model_for(b""), asynchronous)
    assert got == []
    assert "stream ended before [DONE] after 0 events" in str(error)


# --- servers' quirks (issue 13) ------------------------------------------------------------


@pytest.mark.parametrize("streamer", STREAMERS)
def test_ollama_parallel_calls_all_at_index_0_stay_separate(streamer: Any) -> None:
    body = sse(
        chunk({"tool_calls": [fragment(0, "call_a", "get_weather", '{"city": "Paris"}')]}),
        chunk({"tool_calls": [fragment(0, "call_b", "get_weather", '{"city": "Rome"}')]}),
        chunk({}, "tool_calls"),
    )
    merged = ChatResponse.merge(streamer(model_for(body)))
    assert [(c.id, c.arguments) for c in merged.result.output.tool_calls] == [
        ("call_a", '{"city": "Paris"}'),
        ("call_b", '{"city": "Rome"}'),
    ]


def test_fragments_without_an_id_still_continue_the_call_at_their_index() -> None:
    body = sse(
        chunk({"tool_calls": [fragment(0, "call_a", "f", '{"x"')]}),
        chunk({"tool_calls": [fragment(0, None, None, ": 1}")]}),
        chunk({"tool_calls": [fragment(0, "call_b", "f", "{}")]}),
    )
    merged = ChatResponse.merge(stream_sync(model_for(body)))
    assert [(c.id, c.arguments) for c in merged.result.output.tool_calls] == [
        ("call_a", '{"x": 1}'),
        ("call_b", "{}"),
    ]


@pytest.mark.parametrize("streamer", STREAMERS)
def test_a_stream_of_several_choices_keeps_choice_0_only(streamer: Any) -> None:
    def of(index: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": index, "delta": delta, "finish_reason": finish}
        return {"id": "c", "model": "m", "choices": [choice]}

    body = sse(
        of(0, {"content": "Hello"}),
        of(1, {"content": "Bonjour"}),
        of(1, {"tool_calls": [fragment(0, "call_x", "f", "{}")]}),
        of(0, {"content": " there"}),
        of(1, {}, "tool_calls"),
        of(0, {}, "stop"),
    )
    merged = ChatResponse.merge(streamer(model_for(body)))
    assert merged.text == "Hello there"
    assert merged.result.output.tool_calls == ()
    assert merged.result.finish_reason == "stop"


@pytest.mark.parametrize("streamer", STREAMERS)
def test_cr_only_line_endings_and_a_last_event_ending_in_cr(streamer: Any) -> None:
    body = sse(chunk({"content": "a"}), chunk({"content": "b"}, "stop"), done=False)
    cr_only = body.replace(b"\n", b"\r") + b"data: [DONE]\r\r"
    assert "".join(c.text for c in streamer(model_for(cr_only))) == "ab"
    last_cr = body.replace(b"\n", b"\r")[:-1]  # the last event ends in one \r, no [DONE]
    decoder = SSEDecoder()
    events = decoder.feed(last_cr)
    assert len(events) == 1 and decoder.close() is not None  # the second event is not lost


def test_an_empty_data_event_is_not_dispatched() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data:\n\ndata: \n\n: keep-alive\n\ndata: x\n\n") == ["x"]
    body = b"data:\n\n" + sse(chunk({"content": "ok"}, "stop"))
    assert [c.text for c in stream_sync(model_for(body))] == ["ok"]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_deeply_nested_json_is_a_model_error_not_a_recursion_error(asynchronous: bool) -> None:
    body = b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n"
    _, error = collect(model_for(body), asynchronous)
    assert "nested too deeply" in str(error)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_llama_cpp_error_field_keeps_the_servers_message(asynchronous: bool) -> None:
    body = b'error: {"code": 500, "message": "context size exceeded", "type": "server_error"}\n\n'
    _, error = collect(model_for(body), asynchronous)
    assert "context size exceeded" in str(error)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_an_error_event_keeps_the_servers_message(asynchronous: bool) -> None:
    body = (
        sse(chunk({"content": "par"}), done=False) + b"event: error\ndata: upstream timed out\n\n"
    )
    got, error = collect(model_for(body), asynchronous)
    assert [c.text for c in got] == ["par"]
    assert "upstream timed out" in str(error)


@pytest.mark.parametrize("streamer", STREAMERS)
def test_a_stream_labelled_json_is_read_as_a_stream(streamer: Any) -> None:
    body = sse(chunk({"content": "It "}), chunk({"content": "works"}, "stop"))
    chunks = streamer(model_for(body, content_type="application/json"))
    assert "".join(c.text for c in chunks) == "It works"


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_json_error_body_under_event_stream_keeps_the_servers_message(
    asynchronous: bool,
) -> None:
    body = json.dumps({"error": {"message": "model not loaded", "code": "not_found"}}).encode()
    _, error = collect(model_for(body), asynchronous)
    assert "model not loaded" in str(error) and "instead of a stream" in str(error)
