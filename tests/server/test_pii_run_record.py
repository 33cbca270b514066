"""A served agent with ``PIIHook``s: a run's record (its ``kwargs``, as the runs' routes return
it and as the run store keeps it) holds the input as the agent cleans it, never the data the
hooks remove; an input a hook blocks is refused before anything of it is stored."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette")
from langgraph_sdk import get_sync_client

from checkpoint.sqlite import SqliteSaver
from graph_agent import ReactAgent, ScriptedChatModel
from graph_agent.runs import SqliteRunStore
from graph_agent.server import create_app
from hooks import PIIHook
from tests.server.conftest import live_server

EMAIL, CARD = "bob@example.org", "4111 1111 1111 1111"
SECRETS = (EMAIL, CARD, "4111", "bob@")


@contextmanager
def served(tmp_path: Path, *hooks: PIIHook, answers: int = 1) -> Iterator[str]:
    """An agent with ``hooks``, served with its threads and runs in SQLite under
    ``tmp_path``; its base URL."""
    saver = SqliteSaver(tmp_path / "threads.sqlite")
    store = SqliteRunStore(tmp_path / "runs.sqlite")
    model = ScriptedChatModel(["Noted."] * answers)
    agent = ReactAgent(name="support", model=model, hooks=list(hooks), saver=saver)
    try:
        with live_server(create_app({"support": agent}, runs=store)) as url:
            yield url
    finally:
        asyncio.run(store.aclose())
        saver.close()


def said(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def kwargs_of(run: Any) -> dict[str, Any]:
    """A run's ``kwargs`` (served as LangGraph's server does; the SDK's type leaves it out)."""
    kwargs: dict[str, Any] = run["kwargs"]
    return kwargs


def stored_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file())


def test_the_run_record_keeps_the_input_as_the_agent_cleans_it(tmp_path: Path) -> None:
    hooks = (PIIHook("email"), PIIHook("credit_card", "mask"))
    with served(tmp_path, *hooks, answers=2) as url, get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        sent = said(f"I am {EMAIL}, card {CARD}")
        client.runs.wait(thread, "support", input=sent)
        waited = client.runs.list(thread)[0]
        streamed = list(client.runs.stream(thread, "support", input=sent, stream_mode="values"))
        assert streamed[-1].event == "values"
        runs = client.runs.list(thread)
        assert len(runs) == 2 and waited["run_id"] in {r["run_id"] for r in runs}
        records = [client.runs.get(thread, r["run_id"]) for r in runs]
    for record in (*runs, *records):
        (message,) = kwargs_of(record)["input"]["messages"]
        assert message["content"] == "I am [REDACTED_EMAIL], card **** **** **** 1111"
        assert message["type"] == "human"
    assert [s for s in SECRETS if s in repr([runs, records])] == []
    kept = stored_bytes(tmp_path)  # the run store and the saver, on disk (WAL files too)
    assert b"[REDACTED_EMAIL]" in kept
    assert [s for s in SECRETS if s.encode() in kept] == []


def test_an_input_without_personal_data_is_kept_as_sent(tmp_path: Path) -> None:
    with served(tmp_path, PIIHook("email")) as url, get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        client.runs.wait(thread, "support", input=said("hello"))
        (run,) = client.runs.list(thread)
    assert kwargs_of(run)["input"] == said("hello")


def test_an_input_a_hook_blocks_is_refused_and_nothing_of_it_stored(tmp_path: Path) -> None:
    with served(tmp_path, PIIHook("email", "block")) as url, get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        for path in (f"/threads/{thread}/runs/wait", "/runs/wait", f"/threads/{thread}/runs"):
            answer = httpx.post(
                url + path, json={"assistant_id": "support", "input": said(f"I am {EMAIL}")}
            )
            assert answer.status_code == 422, answer.text
            detail = answer.json()["detail"]
            assert "PII blocked: 1 email value(s) found in the input" in detail
            assert EMAIL not in detail
        assert client.runs.list(thread) == []
        assert [t["thread_id"] for t in client.threads.search()] == [thread]  # none made
    assert [s for s in SECRETS if s.encode() in stored_bytes(tmp_path)] == []


def test_a_resume_keeps_the_messages_of_its_update_cleaned(tmp_path: Path) -> None:
    ask = PIIHook("ticket", "block", detector=r"TCK-\d+", on_block="interrupt")
    with served(tmp_path, PIIHook("email"), ask) as url, get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        client.runs.wait(thread, "support", input=said("about TCK-1234"))
        update = said(f"receipt to {EMAIL}")
        answer = client.runs.wait(thread, "support", command={"resume": True, "update": update})
        assert isinstance(answer, dict)
        assert [m["content"] for m in answer["messages"]][1:] == [
            "receipt to [REDACTED_EMAIL]",
            "Noted.",
        ]
        resumed = next(r for r in client.runs.list(thread) if "command" in kwargs_of(r))
    (message,) = kwargs_of(resumed)["command"]["update"]["messages"]
    assert message["content"] == "receipt to [REDACTED_EMAIL]"
    assert kwargs_of(resumed)["command"]["resume"] is True
    assert EMAIL.encode() not in stored_bytes(tmp_path)


def redis_text(url: str, prefix: str) -> bytes:
    """Every value Redis keeps under ``prefix``, whatever the key's type."""
    import redis

    with redis.Redis.from_url(url) as client:
        kept: list[Any] = []
        for key in client.scan_iter(f"{prefix}*"):
            kind = client.type(key)
            read = {
                b"string": client.get,
                b"hash": client.hgetall,
                b"list": lambda k: client.lrange(k, 0, -1),
                b"set": client.smembers,
                b"zset": lambda k: client.zrange(k, 0, -1),
                b"stream": client.xrange,
            }[kind]
            kept.append(read(key))
    return repr(kept).encode()


def test_on_redis_the_run_record_and_log_hold_no_removed_data(redis_url: str) -> None:
    from checkpoint import RedisSaver
    from graph_agent.runs import RedisRunStore
    from tests.server.test_two_servers import closing_on_its_loop

    prefix = f"pii-{uuid.uuid4().hex[:8]}"
    saver = RedisSaver.from_url(redis_url, key_prefix=prefix)
    store = RedisRunStore.from_url(redis_url, prefix=f"{prefix}:runs")
    hooks = [PIIHook("email"), PIIHook("credit_card", "mask")]
    agent = ReactAgent(
        name="support", model=ScriptedChatModel(["Noted."]), hooks=hooks, saver=saver
    )
    app = create_app({"support": agent}, runs=store)
    closing_on_its_loop(app, saver, store)
    with live_server(app) as url, get_sync_client(url=url) as client:
        thread = client.threads.create()["thread_id"]
        sent = said(f"I am {EMAIL}, card {CARD}")
        list(client.runs.stream(thread, "support", input=sent, stream_mode=["values", "debug"]))
        (run,) = client.runs.list(thread)
    (message,) = kwargs_of(run)["input"]["messages"]
    assert message["content"] == "I am [REDACTED_EMAIL], card **** **** **** 1111"
    kept = redis_text(redis_url, prefix)
    assert b"[REDACTED_EMAIL]" in kept and b"**** **** **** 1111" in kept
    assert [s for s in SECRETS if s.encode() in kept] == []
