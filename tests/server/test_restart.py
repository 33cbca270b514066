"""What a restarted server (or a second one on the same files) knows: every thread with its
assistant and metadata, every run with its status and its events, and the runs it had
accepted but not finished, which it takes up and finishes (the embedded runs backend: run
records and event logs in the threads' SQLite file)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_sync_client

from checkpoint import SqliteSaver
from graph_agent import AssistantMessage, FunctionChatModel, Prompt, ReactAgent
from graph_agent.runs import SqliteRunStore
from graph_agent.server import create_app
from tests.redis_servers import free_port

from .conftest import live_server, serve_process, stop_process


def agent(name: str, saver: SqliteSaver) -> ReactAgent:
    def reply(prompt: Prompt) -> AssistantMessage:
        return AssistantMessage(f"{name} says: {prompt.messages[-1].text}")

    return ReactAgent(name=name, model=FunctionChatModel(reply), saver=saver)


@contextmanager
def server_on(db: Path) -> Iterator[str]:
    """A server of ``weather`` and ``payments`` on the SQLite file ``db``; stopped (its
    objects closed) at the end, as a process that ends."""
    saver = SqliteSaver(db)
    store = SqliteRunStore(db)
    app = create_app(
        {"weather": agent("weather", saver), "payments": agent("payments", saver)}, runs=store
    )
    try:
        with live_server(app) as url:
            yield url
    finally:
        import asyncio

        asyncio.run(store.aclose())
        saver.close()


def said(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def test_a_restarted_server_serves_each_thread_by_the_assistant_that_ran_it(tmp_path: Path) -> None:
    db = tmp_path / "threads.sqlite"
    with server_on(db) as url, get_sync_client(url=url) as client:
        thread = client.threads.create(metadata={"customer": "c-42"})["thread_id"]
        first = client.runs.wait(thread, "payments", input=said("pay 10"))
        assert (
            isinstance(first, dict) and first["messages"][-1]["content"] == "payments says: pay 10"
        )
    with server_on(db) as url, get_sync_client(url=url) as client:
        metadata = client.threads.get(thread)["metadata"] or {}
        assert metadata["customer"] == "c-42"
        assert metadata["graph_id"] == "payments"
        assert [t["thread_id"] for t in client.threads.search(metadata={"customer": "c-42"})] == [
            thread
        ]
        again = client.runs.wait(thread, "payments", input=said("pay 20"))
        assert (
            isinstance(again, dict) and again["messages"][-1]["content"] == "payments says: pay 20"
        )
        wrong = httpx.post(
            f"{url}/threads/{thread}/runs/wait",
            json={"assistant_id": "weather", "input": said("x")},
        )
        assert wrong.status_code == 409
        assert "belongs to 'payments'" in wrong.json()["detail"]


def test_a_restarted_server_lists_earlier_runs_and_replays_their_events(tmp_path: Path) -> None:
    db = tmp_path / "threads.sqlite"
    with server_on(db) as url, get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        streamed = list(
            client.runs.stream(thread, "weather", input=said("rain?"), stream_mode="values")
        )
        run_id = client.runs.list(thread)[0]["run_id"]
    with server_on(db) as url, get_sync_client(url=url) as client:
        (run,) = client.runs.list(thread)
        assert (run["run_id"], run["status"]) == (run_id, "success")
        assert client.runs.get(thread, run_id)["status"] == "success"
        replayed = list(client.runs.join_stream(thread, run_id))
        later = list(client.runs.join_stream(thread, run_id, last_event_id="2"))
        answer = client.runs.join(thread, run_id)
    assert [p.event for p in replayed] == [p.event for p in streamed]
    assert [p.data for p in replayed] == [p.data for p in streamed]
    assert [p.data for p in later] == [p.data for p in streamed][2:]
    assert isinstance(answer, dict) and answer["messages"][-1]["content"] == "weather says: rain?"


SERVED = """
import os, pathlib
from graph_agent import AssistantMessage, FunctionChatModel, ReactAgent, ToolCall, tool
from graph_agent import ToolResponseMessage

GATE = pathlib.Path(os.environ["GATE"])

@tool
async def archive(note: str) -> str:
    \"\"\"Archive a note; in the first server process it never ends.\"\"\"
    import asyncio
    (GATE.parent / f"entered-{os.getpid()}-{note}").touch()
    while not GATE.exists():
        await asyncio.sleep(0.02)
    return f"archived {note}"

def reply(prompt):
    last = prompt.messages[-1]
    if isinstance(last, ToolResponseMessage):
        return f"Done: {last.responses[0].response_data}."
    call = ToolCall(id="call_" + last.text, name="archive", arguments='{"note": "%s"}' % last.text)
    return AssistantMessage("", tool_calls=[call])

agent = ReactAgent(name="keeper", model=FunctionChatModel(reply), tools=[archive])
"""


def test_runs_accepted_by_a_killed_server_are_taken_up_and_finished_by_the_next(
    tmp_path: Path,
) -> None:
    """The running run and the one queued behind it, both accepted by a server SIGKILLed in
    the first one's tool: the next server finishes both, in order, without a client asking."""
    module, db, gate = tmp_path / "served.py", tmp_path / "threads.sqlite", tmp_path / "open"
    module.write_text(SERVED)
    port = free_port()
    first = serve_process(module, db, port, GATE=str(gate))
    try:
        with get_sync_client(url=f"http://127.0.0.1:{port}") as client:
            thread = client.threads.create()["thread_id"]
            running = client.runs.create(thread, "keeper", input=said("n1"))
            queued = client.runs.create(thread, "keeper", input=said("n2"))
            assert client.runs.get(thread, queued["run_id"])["status"] == "pending"
            while not list(tmp_path.glob("entered-*-n1")):
                pass
    finally:
        stop_process(first, signal.SIGKILL)
    gate.touch()
    second = serve_process(module, db, port, GATE=str(gate))
    try:
        with get_sync_client(url=f"http://127.0.0.1:{port}") as client:
            client.runs.join(thread, queued["run_id"])
            statuses = [client.runs.get(thread, r["run_id"])["status"] for r in (running, queued)]
            values: Any = client.threads.get_state(thread)["values"]
            texts = [m["content"] for m in values["messages"]]
            listed = [r["run_id"] for r in client.runs.list(thread)]
    finally:
        stop_process(second)
    assert statuses == ["success", "success"]
    assert listed == [queued["run_id"], running["run_id"]]
    assert texts == [
        "n1", "", "archived n1", "Done: archived n1.",
        "n2", "", "archived n2", "Done: archived n2.",
    ]  # fmt: skip


def test_a_runs_log_holds_the_runs_own_objects_for_any_protocol_to_read(tmp_path: Path) -> None:
    """The log kept beside the threads is in no protocol's words: the run's events and
    states, which another reader (here, ten lines) turns into its own; the Agent Protocol's
    stream is made of it when a client reads it, the same from a restarted server."""
    import asyncio

    from graph_agent import events as ev
    from graph_agent.runs import ATTEMPT, EVENT, STATE

    db = tmp_path / "threads.sqlite"
    with server_on(db) as url, get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        streamed = list(client.runs.stream(thread, "weather", input=said("fog?")))
        run_id = client.runs.list(thread)[0]["run_id"]

    async def read() -> list[Any]:
        store = SqliteRunStore(db)
        try:
            return await store.events(run_id)
        finally:
            await store.aclose()

    entries = asyncio.run(read())
    assert entries[0].kind == ATTEMPT and entries[0].data == 1
    assert {e.kind for e in entries} == {ATTEMPT, EVENT, STATE}
    events = [e.data for e in entries if e.kind == EVENT]
    assert all(isinstance(e, ev.RunEvent) for e in events)
    answers = [e.message.text for e in events if isinstance(e, ev.ModelEnd)]
    assert answers == ["weather says: fog?"]
    assert [p.event for p in streamed][:2] == ["metadata", "values"]
    with server_on(db) as url, get_sync_client(url=url) as client:
        replayed = list(client.runs.join_stream(thread, run_id))
    assert [(p.event, p.data) for p in replayed] == [(p.event, p.data) for p in streamed]


FAILING = """
from graph_agent import FunctionChatModel, ReactAgent

class VendorError(Exception):
    pass

def reply(prompt):
    raise VendorError("key sk-secret-1 refused")

agent = ReactAgent(name="flaky", model=FunctionChatModel(reply))
"""


def test_a_failed_runs_error_reads_back_the_same_and_hides_a_third_partys_message(
    tmp_path: Path,
) -> None:
    module, db = tmp_path / "served.py", tmp_path / "threads.sqlite"
    module.write_text(FAILING)
    port = free_port()
    first = serve_process(module, db, port)
    try:
        with get_sync_client(url=f"http://127.0.0.1:{port}") as client:
            thread = client.threads.create()["thread_id"]
            live = list(client.runs.stream(thread, "flaky", input=said("hi")))
            run_id = client.runs.list(thread)[0]["run_id"]
            answer = client.runs.join(thread, run_id)
    finally:
        stop_process(first)
    second = serve_process(module, db, port)
    try:
        with get_sync_client(url=f"http://127.0.0.1:{port}") as client:
            replayed = list(client.runs.join_stream(thread, run_id))
            again = client.runs.join(thread, run_id)
    finally:
        stop_process(second)
    error = {"error": "VendorError", "message": "An internal error occurred"}
    assert (live[-1].event, live[-1].data) == ("error", error)
    assert [(p.event, p.data) for p in replayed] == [(p.event, p.data) for p in live]
    assert answer == again == {"__error__": error}


def test_any_run_is_read_in_the_modes_its_reader_asks_before_and_after_a_restart(
    tmp_path: Path,
) -> None:
    """A run streamed in ``messages-tuple`` only (as agent-chat-ui asks), or not streamed at
    all, still has its whole timeline: a join in ``run_events`` gets every event, live and
    after a restart; a mode that needs states the run did not keep, or one we do not serve,
    is a 422 saying why."""
    db = tmp_path / "threads.sqlite"
    with server_on(db) as url, get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        chat = list(
            client.runs.stream(thread, "weather", input=said("rain?"), stream_mode="messages-tuple")
        )
        assert all(p.event in ("metadata", "messages") for p in chat), [p.event for p in chat]
        run_id = client.runs.list(thread)[0]["run_id"]
        live = list(client.runs.join_stream(thread, run_id, stream_mode="run_events"))
        client.runs.wait(thread, "weather", input=said("snow?"))  # streams nothing
        waited = next(r["run_id"] for r in client.runs.list(thread) if r["run_id"] != run_id)
    with server_on(db) as url, get_sync_client(url=url) as client:
        replayed = list(client.runs.join_stream(thread, run_id, stream_mode=["run_events"]))
        later = list(
            client.runs.join_stream(thread, run_id, stream_mode="run_events", last_event_id="3")
        )
        in_values = list(client.runs.join_stream(thread, run_id, stream_mode="values"))
        waited_events = list(client.runs.join_stream(thread, waited, stream_mode="run_events"))
        as_values = httpx.get(
            f"{url}/threads/{thread}/runs/{waited}/stream", params={"stream_mode": "values"}
        )
        unknown = httpx.get(
            f"{url}/threads/{thread}/runs/{run_id}/stream", params={"stream_mode": "pictures"}
        )
    kinds = [p.data["kind"] for p in live if p.event == "run_events"]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end", kinds
    assert {"node_start", "model_start", "model_end", "checkpoint"} <= set(kinds), kinds
    assert [(p.event, p.data) for p in replayed] == [(p.event, p.data) for p in live]
    assert [p.data for p in later] == [p.data for p in live][3:]
    assert in_values[-1].event == "values"  # its states were kept: messages-tuple needs them
    assert in_values[-1].data["messages"][-1]["content"] == "weather says: rain?"
    waited_kinds = [p.data["kind"] for p in waited_events if p.event == "run_events"]
    assert waited_kinds[0] == "run_start" and waited_kinds[-1] == "run_end", waited_kinds
    assert as_values.status_code == 422  # a run with no stream kept no state to show
    assert "kept no state of its thread" in as_values.json()["detail"]
    assert "'run_events'" in as_values.json()["detail"]
    assert unknown.status_code == 422 and "pictures" in unknown.json()["detail"]
