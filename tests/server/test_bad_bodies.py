"""Malformed bodies and query parameters on every route: each is a 422 whose JSON body names
the field, never a 500; and a body holding what no answer could write back (a lone surrogate,
a number that is not finite, nesting too deep) is refused before anything is stored, so one
request cannot break a thread, its runs or the thread list for everyone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from checkpoint import MemorySaver
from graph_agent import ReactAgent, ScriptedChatModel
from graph_agent.server import create_app

from .conftest import live_server

JSON = {"content-type": "application/json"}
HI = '{"messages": [{"role": "user", "content": "hi"}]}'


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    """A client of a served agent whose thread ``t`` has run once."""
    agent = ReactAgent(name="a", model=ScriptedChatModel(["ok"] * 50), saver=MemorySaver())
    with live_server(create_app({"a": agent})) as url, httpx.Client(base_url=url) as client:
        client.post("/threads", json={"thread_id": "t"}).raise_for_status()
        ran = client.post(
            "/threads/t/runs/wait", json={"assistant_id": "a", "input": {"messages": "hi"}}
        )
        assert ran.json()["messages"][-1]["content"] == "ok"
        yield client


def send(http: httpx.Client, method: str, path: str, body: str | bytes | None) -> httpx.Response:
    return http.request(method, path, content=body, headers=JSON if body is not None else None)


def run(extra: str) -> str:
    return '{"assistant_id": "a", "input": ' + HI + ", " + extra + "}"


MALFORMED = [
    # (method, path, body, the field the answer names)
    ("POST", "/threads", "[" * 200_000 + "]" * 200_000, "nested too deeply"),
    ("POST", "/threads", '{"metadata": ' + '{"a": ' * 150 + "1" + "}" * 151, "metadata.a.a"),
    ("POST", "/threads", '{"thread_id": 5}', "thread_id"),
    ("POST", "/threads", '{"if_exists": ["raise"]}', "if_exists"),
    ("POST", "/threads", '{"metadata": [1]}', "metadata"),
    ("POST", "/threads", '{"metadata": {"x": NaN}}', "NaN"),
    ("POST", "/threads", '{"metadata": {"x": 1e999}}', "metadata.x"),
    ("POST", "/threads/search", '{"limit": "ten"}', "limit"),
    ("POST", "/threads/search", '{"limit": 1e999}', "limit"),
    ("POST", "/threads/search", '{"limit": 0}', "limit"),
    ("POST", "/threads/search", '{"offset": [1]}', "offset"),
    ("POST", "/threads/search", '{"offset": -1}', "offset"),
    ("POST", "/threads/search", '{"ids": "t"}', "ids"),
    ("POST", "/threads/search", '{"status": ["idle"]}', "status"),
    ("POST", "/threads/search", '{"sort_order": 1}', "sort_order"),
    ("POST", "/threads/search", '{"metadata": 5}', "metadata"),
    ("POST", "/assistants/search", '{"offset": "x"}', "offset"),
    ("POST", "/assistants/search", '{"limit": 1e999}', "limit"),
    ("POST", "/assistants/search", '{"graph_id": {}}', "graph_id"),
    ("PATCH", "/threads/t", '{"metadata": "x"}', "metadata"),
    ("POST", "/threads/t/runs/wait", run('"metadata": 5'), "metadata"),
    ("POST", "/threads/t/runs/wait", run('"metadata": "x"'), "metadata"),
    ("POST", "/threads/t/runs", run('"config": {"configurable": 5}'), "config.configurable"),
    ("POST", "/threads/t/runs", run('"config": 5'), "config"),
    ("POST", "/threads/t/runs", run('"config": {"recursion_limit": "x"}'), "config.recursion_limit"),
    ("POST", "/threads/t/runs", run('"context": [1]'), "context"),
    ("POST", "/threads/t/runs", run('"checkpoint": 5'), "checkpoint"),
    ("POST", "/threads/t/runs", run('"checkpoint": {"checkpoint_id": 5}'), "checkpoint.checkpoint_id"),
    ("POST", "/threads/t/runs", run('"multitask_strategy": ["enqueue"]'), "multitask_strategy"),
    ("POST", "/threads/t/runs", run('"stream_subgraphs": "yes"'), "stream_subgraphs"),
    ("POST", "/threads/t/runs/stream", run('"on_disconnect": 1'), "on_disconnect"),
    ("POST", "/threads/t/runs/stream", '{"assistant_id": "a", "command": "go"}', "command"),
    ("POST", "/threads/t/runs/wait", '{"assistant_id": ["a"], "input": null}', "assistant_id"),
    ("POST", "/runs/wait", run('"on_completion": 5'), "on_completion"),
    ("POST", "/threads/t/history", '{"limit": 1e999}', "limit"),
    ("POST", "/threads/t/history", '{"limit": "ten"}', "limit"),
    ("POST", "/threads/t/history", '{"before": 5}', "before"),
    ("POST", "/threads/t/history", '{"checkpoint": "x"}', "checkpoint"),
    ("POST", "/threads/t/state", '{"values": {}, "as_node": 5}', "as_node"),
    ("POST", "/threads/t/state", '{"values": {}, "config": {"configurable": 5}}', "config.configurable"),
    ("POST", "/threads/t/state/checkpoint", '{"checkpoint": 5}', "checkpoint"),
    ("GET", "/threads/t/runs?limit=ten", None, "limit"),
    ("GET", "/threads/t/runs?limit=-1", None, "limit"),
    ("GET", "/threads/t/runs?offset=1e999", None, "offset"),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "body", "field"), MALFORMED)
def test_a_malformed_field_is_a_422_that_names_it(
    http: httpx.Client, method: str, path: str, body: str | None, field: str
) -> None:
    answer = send(http, method, path, body)
    assert answer.status_code == 422, answer.text
    assert field in answer.json()["detail"]
    # nothing was made of it: the thread and the thread list are as they were
    assert [t["thread_id"] for t in http.post("/threads/search", json={}).json()] == ["t"]
    assert len(http.get("/threads/t/runs").json()) == 1


LONE = r'"x \ud800"'  # a lone surrogate, as JSON escapes it
UNSTORABLE = [
    # (method, path, body, the field the answer names)
    ("POST", "/threads", '{"thread_id": "new", "metadata": {"note": ' + LONE + "}}", "metadata.note"),
    ("POST", "/threads", '{"thread_id": ' + LONE + "}", "thread_id"),
    ("POST", "/threads", '{"metadata": {' + LONE + ": 1}}", "metadata"),
    ("PATCH", "/threads/t", '{"metadata": {"note": ' + LONE + "}}", "metadata.note"),
    ("POST", "/threads/t/runs/wait", run('"metadata": {"note": ' + LONE + "}"), "metadata.note"),
    (
        "POST",
        "/threads/t/runs/wait",
        '{"assistant_id": "a", "input": {"messages": [{"role": "user", "content": ' + LONE + "}]}}",
        "input.messages[0].content",
    ),
    ("POST", "/threads/t/runs", run('"config": {"configurable": {"k": ' + LONE + "}}"), "config.configurable.k"),
    ("POST", "/threads/t/runs", run('"context": {"k": ' + LONE + "}"), "context.k"),
    ("POST", "/threads/t/runs", '{"assistant_id": "a", "command": {"resume": ' + LONE + "}}", "command.resume"),
    ("POST", "/threads/t/state", '{"values": {"messages": [' + LONE + "]}}", "values.messages[0]"),
    ("POST", "/runs/wait", run('"metadata": {"k": ' + LONE + '}, "on_completion": "keep"'), "metadata.k"),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "body", "field"), UNSTORABLE)
def test_a_lone_surrogate_is_refused_and_nothing_is_stored(
    http: httpx.Client, method: str, path: str, body: str, field: str
) -> None:
    before = http.get("/threads/t/state").json()
    metadata = http.get("/threads/t").json()["metadata"]
    answer = send(http, method, path, body)
    assert answer.status_code == 422, answer.text
    detail = answer.json()["detail"]
    assert field in detail and "lone surrogate" in detail
    # the thread, its runs and the thread list still answer, unchanged
    found = http.post("/threads/search", json={})
    assert found.status_code == 200 and [t["thread_id"] for t in found.json()] == ["t"]
    assert http.get("/threads/t").json()["metadata"] == metadata
    assert http.get("/threads/t/state").json() == before
    runs = http.get("/threads/t/runs")
    assert runs.status_code == 200 and len(runs.json()) == 1
    assert http.get("/threads/new").status_code == 404


def test_a_surrogate_pair_is_text_and_is_kept(http: httpx.Client) -> None:
    """What is refused is a lone surrogate only: an escaped pair is one character."""
    answer = send(
        http, "POST", "/threads", r'{"thread_id": "u", "metadata": {"e": "\ud83d\ude00"}}'
    )
    assert answer.status_code == 200
    assert http.get("/threads/u").json()["metadata"] == {"e": "\N{GRINNING FACE}"}


def test_a_body_that_is_not_utf8_is_a_422(http: httpx.Client) -> None:
    answer = send(http, "POST", "/threads", b'{"metadata": {"x": "\xed\xa0\x80"}}')
    assert answer.status_code == 422
    assert "not UTF-8" in answer.json()["detail"]
    assert [t["thread_id"] for t in http.post("/threads/search", json={}).json()] == ["t"]


def test_a_run_from_a_sdk_still_reads_every_field(http: httpx.Client) -> None:
    """The fields as the clients send them are all still read (nulls are absent)."""
    body: dict[str, Any] = {
        "assistant_id": "a",
        "input": {"messages": [{"role": "user", "content": "again"}]},
        "metadata": {"from": "sdk"},
        "config": {"configurable": {"user": "ada"}, "recursion_limit": 25, "tags": []},
        "context": None,
        "checkpoint": None,
        "multitask_strategy": None,
        "stream_mode": ["values"],
        "stream_subgraphs": False,
        "stream_resumable": True,
        "on_disconnect": "continue",
        "if_not_exists": None,
        "feedback_keys": None,
    }
    answer = http.post("/threads/t/runs/wait", json=body)
    assert answer.status_code == 200 and answer.json()["messages"][-1]["content"] == "ok"
    runs = http.get("/threads/t/runs", params={"limit": 1}).json()
    assert runs[0]["metadata"] == {"from": "sdk"}


def test_a_thread_id_in_any_script_is_answered_and_its_location_followed(
    http: httpx.Client,
) -> None:
    """Thread ids may be any text; the headers that name a run (Latin-1 only) carry them
    percent-encoded (a 500 once the run had started, before)."""
    thread = "日本 1"
    assert http.post("/threads", json={"thread_id": thread}).status_code == 200
    path = f"/threads/{quote(thread, safe='')}"
    waited = http.post(f"{path}/runs/wait", json={"assistant_id": "a", "input": {"messages": "hi"}})
    assert waited.status_code == 200 and waited.json()["messages"][-1]["content"] == "ok"
    assert waited.headers["location"].startswith(f"{path}/runs/")
    joined = http.get(waited.headers["location"])
    assert joined.status_code == 200 and joined.json()["messages"][-1]["content"] == "ok"
    with http.stream("POST", f"{path}/runs/stream", json={"assistant_id": "a"}) as stream:
        assert stream.status_code == 200
        rejoin = stream.headers["location"]
        stream.read()
    with http.stream("GET", rejoin) as again:
        assert again.status_code == 200 and "event: metadata" in again.read().decode()
