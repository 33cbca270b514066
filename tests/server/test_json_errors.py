"""Every error the server answers is JSON, ``{"detail": ...}``: an unknown route, the Agent
Protocol's endpoints it does not serve (the store, crons, assistant versions, batches), a
method a route does not take, a body over the limit or unreadable, and a fault of its own."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from checkpoint import MemorySaver
from graph_agent import ReactAgent, ScriptedChatModel
from graph_agent.server import create_app

from .conftest import live_server


@pytest.fixture
def url() -> Iterator[str]:
    agent = ReactAgent(name="a", model=ScriptedChatModel(["ok"] * 5), saver=MemorySaver())
    with live_server(create_app({"a": agent}, max_body=1000)) as base:
        yield base


def detail_of(answer: httpx.Response, status: int) -> str:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    detail = answer.json()["detail"]
    assert isinstance(detail, str)
    return detail


NOT_SERVED = [
    ("GET", "/store/items", "store"),
    ("PUT", "/store/items", "store"),
    ("POST", "/store/items/search", "store"),
    ("DELETE", "/store/items", "store"),
    ("POST", "/store/namespaces", "store"),
    ("POST", "/assistants/a/versions", "versions"),
    ("POST", "/assistants/a/latest", "versions"),
    ("POST", "/runs/batch", "POST /runs"),
    ("POST", "/runs/crons", "crons"),
    ("POST", "/runs/crons/search", "crons"),
    ("POST", "/threads/t/runs/crons", "crons"),
    ("GET", "/nope", "not served"),
    ("POST", "/threads/t/copy", "not served"),
]


@pytest.mark.parametrize(("method", "path", "said"), NOT_SERVED)
def test_what_is_not_served_is_a_json_404(url: str, method: str, path: str, said: str) -> None:
    answer = httpx.request(method, url + path, json={})
    assert said in detail_of(answer, 404)


def test_a_method_a_route_does_not_take_is_a_json_405(url: str) -> None:
    answer = httpx.put(url + "/threads/t", json={})
    assert "GET" in detail_of(answer, 405)
    assert "GET" in answer.headers["allow"]


def test_a_body_over_the_limit_or_not_json_is_a_json_4xx(url: str) -> None:
    big = httpx.post(url + "/threads", json={"metadata": {"x": "y" * 2000}})
    assert "over 1000 bytes" in detail_of(big, 413)
    bad = httpx.post(url + "/threads", content=b"{", headers={"content-type": "application/json"})
    assert "not JSON" in detail_of(bad, 422)


def test_a_fault_of_the_server_is_a_json_500_that_says_no_more(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from graph_agent.server import _server

    async def broken(self: object, record: object) -> dict[str, object]:
        raise RuntimeError("secret detail of a bug")

    monkeypatch.setattr(_server.Server, "thread_wire", broken)
    agent = ReactAgent(name="a", model=ScriptedChatModel(["ok"]), saver=MemorySaver())
    with live_server(create_app({"a": agent})) as base:
        answer = httpx.post(base + "/threads", json={})
    assert detail_of(answer, 500) == "An internal error occurred"
