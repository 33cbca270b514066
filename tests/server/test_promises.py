"""What docs/serving.md promises a client, each checked over HTTP against a real server: the
token of ``graph-agent serve`` (``/ok`` open), the body limit (413), a busy thread's state
not edited (409), a fork from an earlier checkpoint, ``command`` with ``update`` and
``goto``, ``context`` reaching the nodes, a deleted busy thread's runs cancelled, streams
not held back by a proxy (``X-Accel-Buffering: no``), CORS off."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from checkpoint import MemorySaver
from graph_agent import END, START, KeyStrategy, RunnableConfig, StateGraph
from tests.redis_servers import free_port

from .conftest import serve_process, stop_process
from .gate_kit import TIMEOUT, served, sse

SERVED = """
from graph_agent import ReactAgent, ScriptedChatModel

agent = ReactAgent(name="echo", model=ScriptedChatModel(["hello"] * 5))
"""


@pytest.mark.parametrize("how", ["--token", "GRAPH_AGENT_TOKEN"])
def test_serve_asks_every_request_but_ok_for_its_token(tmp_path: Path, how: str) -> None:
    module = tmp_path / "served.py"
    module.write_text(SERVED)
    port = free_port()
    if how == "--token":
        process = serve_process(module, tmp_path / "t.sqlite", port, "--token", "s3cret")
    else:
        process = serve_process(module, tmp_path / "t.sqlite", port, GRAPH_AGENT_TOKEN="s3cret")
    url = f"http://127.0.0.1:{port}"
    try:  # serve_process waited for /ok without a token: it is open
        assert httpx.get(f"{url}/ok").status_code == 200
        for method, path in (
            ("GET", "/info"),
            ("POST", "/assistants/search"),
            ("POST", "/threads"),
        ):
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-Api-Key": "wrong"}):
                refused = httpx.request(method, url + path, json={}, headers=headers)
                assert refused.status_code == 401, (method, path, headers)
                assert isinstance(refused.json()["detail"], str)
            for headers in ({"Authorization": "Bearer s3cret"}, {"X-Api-Key": "s3cret"}):
                assert httpx.request(method, url + path, json={}, headers=headers).is_success
        with get_sync_client(url=url, api_key="s3cret") as client:
            thread = client.threads.create()
            state = client.runs.wait(
                thread["thread_id"], "echo", input={"messages": [{"role": "user", "content": "hi"}]}
            )
        assert isinstance(state, dict) and state["messages"][-1]["content"] == "hello"
    finally:
        stop_process(process)


def test_a_body_over_10_mib_is_a_413_and_nothing_of_it_is_stored() -> None:
    with served() as s:
        big = {"metadata": {"note": "x" * (10 * 2**20)}}
        refused = s.http.post("/threads", json=big)
        assert refused.status_code == 413
        assert refused.json()["detail"] == f"the request body is over {10 * 2**20} bytes"
        assert s.http.post("/threads/search", json={}).json() == []
        under = {"metadata": {"note": "x" * (9 * 2**20)}}
        assert s.http.post("/threads", json=under).status_code == 200  # the limit, not less


def test_editing_a_busy_threads_state_is_a_409_and_changes_nothing() -> None:
    edit = {"values": {"messages": [{"role": "user", "content": "edited"}]}}
    with served() as s:
        thread = s.thread()
        s.gate.close()
        run = s.start(thread, "busy").json()
        s.gate.wait_entered(1)
        refused = s.http.post(f"/threads/{thread}/state", json=edit)
        assert refused.status_code == 409, refused.text
        assert isinstance(refused.json()["detail"], str)
        s.gate.open()
        s.join(thread, run["run_id"])
        assert "edited" not in s.texts(thread)
        assert s.http.post(f"/threads/{thread}/state", json=edit).status_code == 200  # idle now
        assert s.texts(thread)[-1] == "edited"


def test_a_run_from_an_earlier_checkpoint_forks_the_thread() -> None:
    with served() as s:
        thread = s.thread()
        s.join(thread, s.start(thread, "one").json()["run_id"])
        after_one = s.http.get(f"/threads/{thread}/state").json()["checkpoint"]
        s.join(thread, s.start(thread, "two").json()["run_id"])
        after_two = s.http.get(f"/threads/{thread}/state").json()["checkpoint"]
        forked = s.start(thread, "three", checkpoint=after_one).json()
        s.join(thread, forked["run_id"])
        texts = s.texts(thread)
        kept = s.http.get(f"/threads/{thread}/state/{after_two['checkpoint_id']}").json()
    assert texts == [
        "one", "", "held one", "done: held one",
        "three", "", "held three", "done: held three",
    ]  # fmt: skip
    assert [m["content"] for m in kept["values"]["messages"]][-1] == "done: held two"


def commands_graph(pause: bool = False) -> Any:
    """``a``, then ``look``, which keeps the run's context as its nodes see it
    (``config.metadata``); ``b`` runs only when a command goes to it. With ``pause``, a run
    stops before ``look``."""

    def look(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        return {"log": ["look"], "seen": dict(config.metadata)}

    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("a", lambda s: {"log": ["a"]}).add_node("b", lambda s: {"log": ["b"]})
    graph.add_node("look", look)
    graph.add_edge(START, "a").add_edge("look", END).add_edge("b", END)
    graph.add_conditional_edges("a", lambda s: "look", {"look": "look", "b": "b"})
    return graph.compile(saver=MemorySaver(), interrupt_before=["look"] if pause else ())


def paused_then(command: dict[str, Any]) -> Any:
    """The values a paused thread of ``commands_graph`` ends with after a run of ``command``."""
    with served(steps=commands_graph(pause=True)) as s:
        thread = s.thread()
        first = s.http.post(
            f"/threads/{thread}/runs/wait", json={"assistant_id": "steps", "input": {"log": []}}
        ).json()
        assert first["log"] == ["a"]
        assert s.http.get(f"/threads/{thread}/state").json()["next"] == ["look"]
        after = s.http.post(
            f"/threads/{thread}/runs/wait", json={"assistant_id": "steps", "command": command}
        )
        assert after.status_code == 200, after.text
        return after.json()


def test_a_command_updates_a_paused_threads_state_before_it_goes_on() -> None:
    assert paused_then({"update": {"log": ["updated"]}})["log"] == ["a", "updated", "look"]
    resumed = paused_then({"resume": None, "update": {"log": ["updated"]}})
    assert resumed["log"] == ["a", "updated", "look"]


@pytest.mark.parametrize(
    "command",
    [{"goto": "b"}, {"update": {"log": ["updated"]}, "goto": "b"}, {"resume": 1, "goto": ["b"]}],
    ids=["alone", "update", "resume"],
)
def test_a_command_with_goto_is_refused_and_the_thread_is_left_as_it_was(
    command: dict[str, Any],
) -> None:
    """As input, a graph's Command takes resume and update: a goto is a 422 that says what to
    do instead, never a run that silently goes elsewhere (docs/serving.md)."""
    with served(steps=commands_graph()) as s:
        thread = s.thread()
        s.http.post(
            f"/threads/{thread}/runs/wait", json={"assistant_id": "steps", "input": {"log": []}}
        )
        before = s.http.get(f"/threads/{thread}/state").json()
        refused = s.http.post(
            f"/threads/{thread}/runs/wait", json={"assistant_id": "steps", "command": command}
        )
        assert refused.status_code == 422, refused.text
        assert "command.goto is not supported" in refused.json()["detail"]
        assert "as_node" in refused.json()["detail"]
        assert s.http.get(f"/threads/{thread}/state").json() == before
        assert len(s.http.get(f"/threads/{thread}/runs").json()) == 1


def test_the_context_of_a_run_is_what_its_nodes_see_as_config_metadata() -> None:
    with served(steps=commands_graph()) as s:
        thread = s.thread()
        body = {"assistant_id": "steps", "input": {"log": []}, "context": {"user_id": "u-7"}}
        answer = s.http.post(f"/threads/{thread}/runs/wait", json=body)
        assert answer.status_code == 200, answer.text
        assert answer.json()["seen"]["user_id"] == "u-7"


def test_deleting_a_busy_thread_cancels_its_runs() -> None:
    with served() as s:
        thread = s.thread()
        s.gate.close()
        seen: list[tuple[str, str, Any]] = []
        with s.http.stream(
            "POST",
            f"/threads/{thread}/runs/stream",
            json={
                "assistant_id": "held",
                "input": {"messages": [{"role": "user", "content": "go"}]},
                "stream_mode": "values",
            },
        ) as stream:
            reader = threading.Thread(target=lambda: seen.extend(sse(stream.iter_lines())))
            reader.start()
            s.gate.wait_entered(1)
            deleted = s.http.delete(f"/threads/{thread}")
            reader.join(TIMEOUT)
            assert not reader.is_alive()  # the run's stream ended with it
        assert deleted.is_success, deleted.text
        assert s.http.get(f"/threads/{thread}").status_code == 404
    answers = [
        m["content"] for _, event, data in seen if event == "values" for m in data["messages"]
    ]
    assert "done: held go" not in answers  # the run stopped: the model did not answer again


def test_streams_tell_a_proxy_not_to_hold_them_back() -> None:
    with served() as s:
        thread = s.thread()
        body = {"assistant_id": "held", "input": {"messages": [{"role": "user", "content": "a"}]}}
        with s.http.stream("POST", f"/threads/{thread}/runs/stream", json=body) as answer:
            assert answer.headers["x-accel-buffering"] == "no"
            answer.read()
        run = s.http.get(f"/threads/{thread}/runs").json()[0]
        with s.http.stream("GET", f"/threads/{thread}/runs/{run['run_id']}/stream") as again:
            assert again.headers["x-accel-buffering"] == "no"
            again.read()


def test_cors_is_off() -> None:
    page = "http://elsewhere.example"
    with served() as s:
        preflight = s.http.options(
            "/threads",
            headers={"Origin": page, "Access-Control-Request-Method": "POST"},
        )
        read = s.http.get("/info", headers={"Origin": page})
        both = [preflight, read]
    for answer in both:
        assert not [h for h in answer.headers if h.lower().startswith("access-control-")]
    assert not preflight.is_success  # no preflight is answered: a browser sends nothing more


def test_the_page_allows_only_its_own_files() -> None:
    with served() as s:
        page = s.http.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = {
        part.split()[0]: part.split()[1:]
        for part in page.headers["content-security-policy"].split(";")
        if part.strip()
    }
    assert policy["default-src"] == ["'self'"]
    for directive in ("script-src", "style-src", "connect-src"):
        assert policy[directive] == ["'self'"], directive  # no inline script, no other origin
    assert policy["object-src"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"]


def test_thread_ids_are_any_non_empty_string_and_uuids_when_the_server_makes_them() -> None:
    with served() as s:
        made = s.thread()
        assert str(uuid.UUID(made)) == made
        named = s.http.post("/threads", json={"thread_id": "my thread ü-1"})
        assert named.status_code == 200 and named.json()["thread_id"] == "my thread ü-1"
        run = s.start("my thread ü-1", "hi").json()
        s.join("my thread ü-1", run["run_id"])
        assert s.texts("my thread ü-1")[-1] == "done: held hi"
