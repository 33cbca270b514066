"""OpenAIChatModel against the local HTTP server of test_servers.py (the one that enforces the
OpenAI request rules): a stalled stream is bounded by ``timeout``, a key the server echoes
never reaches a variable of ours, and only what a retry can change is retried. Real sockets,
sync and async; no network beyond loopback, no API key."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from graph_agent.errors import ModelError
from graph_agent.models import ChatResponse, Prompt
from graph_agent.models.openai import OpenAIChatModel

from .test_servers import ANSWER, MODES, Replayer, Reply, Request, chunk, openai_rules, sse, stream

# an OpenAI-shaped project key; only module constants hold it (a local would show in a frame)
KEY = "sk-proj-Zq8vN2xL5rT7wY1bC4dF6gH9jK3mP0sU" + "T3BlbkFJ" + "a1B2c3D4e5F6g7H8xyzW"
MASKED = f"{KEY[:7]}{'*' * 20}{KEY[-4:]}"  # how OpenAI itself quotes a wrong key


@pytest.fixture
def server() -> Iterator[Replayer]:
    replayer = Replayer()
    yield replayer
    replayer.close()


def model_for(server: Replayer, **settings: Any) -> tuple[OpenAIChatModel, list[float]]:
    """A model on ``server`` with the test key, and the list of the waits it asked for."""
    waits: list[float] = []

    async def async_sleep(seconds: float) -> None:
        waits.append(seconds)

    model = OpenAIChatModel(
        "gpt-4o", f"{server.url}/v1", KEY, sleep=waits.append, async_sleep=async_sleep, **settings
    )
    return model, waits


def ask(model: OpenAIChatModel, how: str) -> ChatResponse:
    """One request the way ``how`` says (call, acall, stream, astream); a stream is merged."""

    async def run() -> ChatResponse:
        try:
            if how == "acall":
                return await model.acall(Prompt("hi"))
            return ChatResponse.merge([c async for c in model.astream(Prompt("hi"))])
        finally:
            await model.aclose()

    try:
        if how == "call":
            return model.call(Prompt("hi"))
        if how == "stream":
            return ChatResponse.merge(list(model.stream(Prompt("hi"))))
        return asyncio.run(run())
    finally:
        model.close()


HOWS = ["call", "acall", "stream", "astream"]


class FirstAnswers:
    """A request rule: the first requests get ``replies``, the later ones the OpenAI rules
    (and then the server's normal answer)."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)

    def __call__(self, request: Request) -> tuple[int, dict[str, Any]] | Reply | None:
        return self.replies.pop(0) if self.replies else openai_rules(request)


def error_reply(status: int, message: str, **headers: str) -> Reply:
    body = {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
    return Reply(json.dumps(body).encode(), "application/json", status, headers=headers)


# --- 1. the idle deadline of a stream follows timeout ---------------------------------------

FIRST = sse(chunk({"role": "assistant", "content": "Hel"}), done=False)
REST = sse(chunk({"content": "lo"}), chunk({}, "stop"))


def stalling(seconds: float, keep_alive: bytes) -> Reply:
    """The first event, then ``seconds`` of silence (or of keep-alive comments), then the
    rest of a good answer."""
    return Reply(
        FIRST + REST, piece=len(FIRST), stall=seconds, stall_after=len(FIRST), keep_alive=keep_alive
    )


STALLS = [pytest.param(b"", id="silent"), pytest.param(b": keep-alive\n\n", id="keep-alive")]


@pytest.mark.parametrize("keep_alive", STALLS)
@pytest.mark.parametrize("asynchronous", MODES)
def test_timeout_bounds_a_stalled_stream(
    server: Replayer, asynchronous: bool, keep_alive: bytes
) -> None:
    server.reply = stalling(30.0, keep_alive)  # longer than the test should ever take
    model, _ = model_for(server, timeout=1.0, max_retries=0)
    started = time.monotonic()
    chunks, error = stream(model, Prompt("hi"), asynchronous)
    elapsed = time.monotonic() - started
    model.close()
    assert isinstance(error, ModelError), "the stalled stream did not fail"
    assert elapsed < 20, elapsed  # not the 60 s default idle deadline
    assert [c.text for c in chunks] == ["Hel"]  # what came before the stall is delivered
    message = str(error)
    assert "stalled" in message and "for 1 s" in message and "stream_idle_timeout" in message


@pytest.mark.parametrize("keep_alive", STALLS)
@pytest.mark.parametrize("asynchronous", MODES)
def test_an_explicit_stream_idle_timeout_is_kept_above_timeout(
    server: Replayer, asynchronous: bool, keep_alive: bytes
) -> None:
    server.reply = stalling(1.0, keep_alive)  # over three times timeout, far below 30 s
    model, _ = model_for(server, timeout=0.3, stream_idle_timeout=30.0, max_retries=0)
    assert model.stream_idle_timeout == 30.0
    chunks, error = stream(model, Prompt("hi"), asynchronous)
    model.close()
    assert error is None, error
    assert ChatResponse.merge(chunks).text == "Hello"


@pytest.mark.parametrize(
    ("settings", "idle"),
    [
        ({}, 60.0),
        ({"timeout": 1.0}, 1.0),
        ({"timeout": 120.0}, 60.0),
        ({"timeout": httpx.Timeout(10.0, read=2.5)}, 2.5),
        ({"timeout": httpx.Timeout(None)}, 60.0),
        ({"timeout": 1.0, "stream_idle_timeout": 90.0}, 90.0),
        ({"timeout": 1.0, "stream_idle_timeout": None}, None),
    ],
    ids=["default", "short", "long", "read-part", "no-timeout", "explicit-longer", "explicit-none"],
)
def test_the_idle_deadline_is_the_shorter_unless_set(settings: dict[str, Any], idle: Any) -> None:
    assert OpenAIChatModel(api_key="sk-test", **settings).stream_idle_timeout == idle


def test_a_set_idle_deadline_is_checked() -> None:
    model = OpenAIChatModel(api_key="sk-test", timeout=1.0)
    with pytest.raises(ValueError, match="stream_idle_timeout"):
        model.stream_idle_timeout = -1.0
    model.stream_idle_timeout = 5.0
    assert model.stream_idle_timeout == 5.0


# --- 2. a key the server echoes is masked where it is read ------------------------------------

ECHO = {
    "error": {
        "message": f"Incorrect API key provided: {KEY}. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
        "type": "invalid_request_error",
        "param": f"the key you sent: {MASKED}",
        "code": "invalid_api_key",
    }
}


def _shown(value: Any) -> str:
    """What a traceback that shows its locals shows of ``value``: its repr, and the repr of
    each value of a dict (the serializers of error trackers walk those)."""
    shown = repr(value)
    if isinstance(value, dict):
        shown += "".join(repr(item) for item in value.values())
    return shown


def where_the_key_shows(error: BaseException) -> list[str]:
    """Every place of ``error`` that shows the key: its str, repr, args and attributes, the
    locals of every frame of its traceback, and all that again for its cause and context."""
    found: list[str] = []
    seen: set[int] = set()
    todo: list[BaseException] = [error]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        name = type(current).__name__
        texts = {"str": str(current), "repr": repr(current), "args": repr(current.args)}
        texts.update((f"attribute {k}", repr(v)) for k, v in vars(current).items())
        found += [f"{name} {where}" for where, text in texts.items() if KEY in text]
        tb = current.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code.co_name
            for local, value in tb.tb_frame.f_locals.items():
                if KEY in _shown(value):
                    found.append(f"{name}: local {local!r} of {code}()")
            tb = tb.tb_next
        todo += [e for e in (current.__cause__, current.__context__) if e is not None]
    return found


def caught(model: OpenAIChatModel, how: str) -> ModelError:
    try:
        ask(model, how)
    except ModelError as error:
        return error
    raise AssertionError("no ModelError")


@pytest.mark.parametrize("how", HOWS)
def test_a_401_that_echoes_the_key_leaves_it_nowhere(server: Replayer, how: str) -> None:
    server.reply = Reply(ANSWER, "application/json", check=lambda request: (401, ECHO))
    model, _ = model_for(server, max_retries=0)
    error = caught(model, how)
    assert server.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    assert error.status == 401
    assert "Incorrect API key provided: ***." in str(error)
    assert error.body is not None and MASKED in error.body  # a masked echo is kept as it is
    assert where_the_key_shows(error) == []


@pytest.mark.parametrize("piece", [7, 4096], ids=["key-split-across-reads", "key-in-one-read"])
@pytest.mark.parametrize("how", ["stream", "astream"])
def test_a_stream_error_event_that_echoes_the_key_leaves_it_nowhere(
    server: Replayer, how: str, piece: int
) -> None:
    server.reply = Reply(sse(chunk({"content": "Hel"}), ECHO, done=False), piece=piece)
    model, _ = model_for(server, max_retries=0)
    error = caught(model, how)
    assert "Incorrect API key provided: ***." in str(error) and MASKED in (error.body or "")
    assert where_the_key_shows(error) == []


@pytest.mark.parametrize("how", ["call", "acall"])
def test_a_body_that_is_no_json_and_echoes_the_key_leaves_it_nowhere(
    server: Replayer, how: str
) -> None:
    page = f"<html><body>token {KEY} refused by the gateway</body></html>".encode()
    server.reply = Reply(page, "text/html")
    model, _ = model_for(server, max_retries=0)
    error = caught(model, how)
    assert "not JSON" in str(error) and "token *** refused" in (error.body or "")
    assert where_the_key_shows(error) == []


# --- 3. only what a retry can change is retried -----------------------------------------------


@pytest.mark.parametrize("how", HOWS)
def test_a_501_is_asked_once(server: Replayer, how: str) -> None:
    server.reply = Reply(ANSWER, "application/json", check=FirstAnswers(error_reply(501, "nope")))
    model, waits = model_for(server, max_retries=2)
    error = caught(model, how)
    assert len(server.requests) == 1 and waits == []
    assert error.status == 501 and "HTTP 501 from POST" in str(error) and "nope" in str(error)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 413, 415, 422, 501, 505, 511])
def test_what_a_retry_cannot_change_is_asked_once(server: Replayer, status: int) -> None:
    server.reply = Reply(ANSWER, "application/json", check=FirstAnswers(error_reply(status, "no")))
    model, waits = model_for(server, max_retries=2)
    error = caught(model, "call")
    assert (len(server.requests), waits, error.status) == (1, [], status)


@pytest.mark.parametrize("how", HOWS)
def test_a_503_is_retried_after_its_retry_after(server: Replayer, how: str) -> None:
    busy = error_reply(503, "overloaded", **{"Retry-After": "7"})
    server.reply = Reply(ANSWER, "application/json", check=FirstAnswers(busy))
    model, waits = model_for(server, max_retries=2)
    assert ask(model, how).text == "ok"
    assert len(server.requests) == 2 and waits == [7.0]


@pytest.mark.parametrize("status", [408, 409, 425, 429, 500, 502, 503, 504, 529])
def test_what_a_retry_can_change_is_retried(server: Replayer, status: int) -> None:
    busy = error_reply(status, "try again")
    server.reply = Reply(ANSWER, "application/json", check=FirstAnswers(busy, busy))
    model, waits = model_for(server, max_retries=2, backoff=0.5)
    assert ask(model, "call").text == "ok"
    assert len(server.requests) == 3 and len(waits) == 2
