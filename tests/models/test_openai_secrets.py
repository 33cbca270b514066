"""A model's answer is never rewritten; the key is masked only in what we show.

OpenAIChatModel against the local HTTP server of test_servers.py, sync and async, a whole
body and a stream: an answer that holds the key (a real one, a short one, a placeholder such
as ``"ollama"``) arrives as the server sent it, usage included, while a key a server echoes
in an error is masked in the error, its traceback's locals, the log and ``repr``. A short
or placeholder key is not searched for at all (docs/models.md, "The API key")."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from graph_agent.models import Usage
from graph_agent.models.openai import OpenAIChatModel

from .test_openai_resilience import HOWS, KEY, ask, caught, where_the_key_shows
from .test_servers import Replayer, Reply, chunk, openai_rules, sse

USAGE = {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
KEYS = [
    pytest.param(KEY, id="real-key"),
    pytest.param("k", id="one-letter"),
    *(pytest.param(key, id=key) for key in ("ollama", "EMPTY", "none", "sk-no-key-required")),
]


@pytest.fixture
def server() -> Iterator[Replayer]:
    replayer = Replayer()
    yield replayer
    replayer.close()


def answer_text(key: str) -> str:
    return f"ok: the key {key} (ollama, EMPTY, none, k), as prompt_tokens says"


def whole_answer(text: str) -> bytes:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    completion = {"id": "c", "object": "chat.completion", "choices": [choice], "usage": USAGE}
    return json.dumps(completion).encode()


def streamed_answer(text: str) -> bytes:
    deltas = [chunk({"content": text[start : start + 3]}) for start in range(0, len(text), 3)]
    return sse(*deltas, chunk({}, "stop"), chunk(None, usage=USAGE))


def answer_reply(how: str, shape: str, text: str) -> Reply:
    if how in ("stream", "astream") and shape == "sse":
        return Reply(streamed_answer(text), check=openai_rules)  # in 7-byte reads
    return Reply(whole_answer(text), "application/json", check=openai_rules)


SHAPES = [
    pytest.param(how, shape, id=f"{how}-{shape}")
    for how in HOWS
    for shape in (["json"] if how in ("call", "acall") else ["sse", "json"])
]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize(("how", "shape"), SHAPES)
def test_an_answer_that_holds_the_key_arrives_unchanged(
    server: Replayer, how: str, shape: str, key: str
) -> None:
    text = answer_text(key)
    server.reply = answer_reply(how, shape, text)
    response = ask(OpenAIChatModel("gpt-4o", f"{server.url}/v1", key, max_retries=0), how)
    assert server.requests[0].headers["Authorization"] == f"Bearer {key}"
    assert response.text == text
    assert response.metadata.usage == Usage(11, 5, 16)


@pytest.mark.parametrize("how", HOWS)
def test_a_short_or_placeholder_key_is_not_searched_for_in_an_error(
    server: Replayer, how: str
) -> None:
    message = "model 'gpt-4o' not found, try pulling it first: ollama pull gpt-4o"
    refused = {"error": {"message": message, "type": "not_found", "param": None, "code": None}}
    server.reply = Reply(b"", check=lambda request: (404, refused))
    for key in ("ollama", "k"):
        error = caught(OpenAIChatModel("gpt-4o", f"{server.url}/v1", key, max_retries=0), how)
        assert error.status == 404
        assert f"HTTP 404 from POST {server.url}/v1/chat/completions: {message}" in str(error)
        assert "***" not in str(error) and "***" not in (error.body or "")


def error_body(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": "bad"}}


@pytest.mark.parametrize(("how", "shape"), SHAPES)
def test_an_error_in_a_successful_answer_that_echoes_the_key_leaves_it_nowhere(
    server: Replayer, how: str, shape: str
) -> None:
    """A 200 whose body (or stream event) is an error quoting the key."""
    echo = error_body(f"key {KEY} is not allowed for gpt-4o")
    if shape == "sse":
        server.reply = Reply(sse(chunk({"content": "Hel"}), echo, done=False))
    else:
        server.reply = Reply(json.dumps(echo).encode(), "application/json")
    error = caught(OpenAIChatModel("gpt-4o", f"{server.url}/v1", KEY, max_retries=0), how)
    assert "key *** is not allowed" in str(error) and KEY not in (error.body or "")
    assert where_the_key_shows(error) == []


@pytest.mark.parametrize("how", HOWS)
def test_the_log_and_repr_show_no_key_and_no_url_password(
    server: Replayer, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A retried 503 and a final 401 that echo the key; a base URL with a short password,
    which an answer may hold as a word all the same."""
    answers = [
        Reply(json.dumps(error_body(f"busy, {KEY}")).encode(), "application/json", 503),
        Reply(json.dumps(error_body(f"wrong key {KEY}")).encode(), "application/json", 401),
    ]
    server.reply = Reply(b"", check=lambda request: answers.pop(0))
    base_url = server.url.replace("http://", "http://me:pw@") + "/v1"
    model = OpenAIChatModel("gpt-4o", base_url, KEY, max_retries=1, backoff=0.0)
    shown = repr(model)
    with caplog.at_level(logging.DEBUG, logger="graph_agent"):
        error = caught(model, how)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "HTTP 503" in logged and "POST http://me:***@127.0.0.1:" in logged
    assert "wrong key ***" in str(error) and "http://me:***@127.0.0.1:" in str(error)
    assert "me:***@" in shown
    for text in (logged, shown, str(error), error.body or ""):
        assert KEY not in text and ":pw@" not in text

    server.reply = answer_reply(how, "json", "pw: the password, as it is")
    assert ask(model, how).text == "pw: the password, as it is"
