"""A server on the loopback answers only to the loopback's names: a page of another site that
reaches it by DNS rebinding (its name made to resolve to 127.0.0.1) is same-origin, so the
origin check lets it in, but its requests name that site's host (docs/serving.md, Security)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from graph_agent.cli._serve import answered_hosts
from graph_agent.server._guard import host_name
from tests._serve_cli import serve_in_process
from tests.server.conftest import live_server

AGENT = (
    "from graph_agent import ReactAgent, ScriptedChatModel\n"
    "agent = ReactAgent(name='helper', model=ScriptedChatModel(['hi'] * 5))\n"
)
RUN = {"assistant_id": "helper", "input": {"messages": [{"role": "user", "content": "hi"}]}}


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "app.py"
    path.write_text(AGENT)
    return path


def as_a_rebound_page(url: str, host: str) -> tuple[httpx.Response, httpx.Response]:
    """What a page of ``host``, rebound to the server's address, sends: same-origin requests
    naming its own host (a thread made, then a run)."""
    origin = f"http://{host}"
    headers = {"Host": host, "Origin": origin, "Sec-Fetch-Site": "same-origin"}
    made = httpx.post(f"{url}/threads", json={}, headers=headers)
    listed = httpx.post(f"{url}/threads/search", json={}, headers=headers)
    return made, listed


def test_serve_on_the_loopback_refuses_another_host(
    module: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = serve_in_process(monkeypatch, [f"{module}:agent", "--saver", "memory"])
    assert served.code == 0
    with live_server(served.app) as url:
        made, listed = as_a_rebound_page(url, "rebind.example:8123")
        assert made.status_code == 403 and listed.status_code == 403
        detail = made.json()["detail"]
        assert "'rebind.example'" in detail and "--allow-host rebind.example" in detail
        # nothing was made: the server's own names see no thread
        assert httpx.post(f"{url}/threads/search", json={}).json() == []
        port = url.rpartition(":")[2]
        for name in ("localhost", "127.0.0.1"):  # the loopback's names are answered
            answer = httpx.post(f"{url}/runs/wait", json=RUN, headers={"Host": f"{name}:{port}"})
            assert answer.status_code == 200, answer.text


def test_allow_host_names_a_host_to_answer(module: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    served = serve_in_process(
        monkeypatch,
        [f"{module}:agent", "--saver", "memory", "--allow-host", "agents.example.com"],
    )
    with live_server(served.app) as url:
        made, _ = as_a_rebound_page(url, "agents.example.com")
        assert made.status_code == 200, made.text
        assert as_a_rebound_page(url, "other.example")[0].status_code == 403


def test_which_hosts_are_answered() -> None:
    assert answered_hosts("127.0.0.1", []) == ["localhost", "127.0.0.1", "::1", "127.0.0.1"]
    assert "::1" in (answered_hosts("[::1]", ["a.example"]) or [])
    assert answered_hosts("0.0.0.0", []) is None  # beyond the loopback: any name, by default
    assert answered_hosts("0.0.0.0", ["a.example"]) == ["a.example"]
    assert [host_name(h) for h in ("LocalHost:80", "[::1]:8123", "::1", "a.example")] == [
        "localhost",
        "::1",
        "::1",
        "a.example",
    ]
