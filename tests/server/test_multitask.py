"""``interrupt`` and ``rollback`` as LangGraph's server does them: ``interrupt`` cancels the
runs queued before it too, and ``rollback`` removes what the cancelled run wrote at once
(the thread is back where that run began, before any next run), its thread's first run
included (the thread is then empty)."""

from __future__ import annotations

from .gate_kit import served

KEPT = ["kept", "", "held kept", "done: held kept"]


def test_interrupt_cancels_the_runs_queued_before_it() -> None:
    with served() as s:
        thread = s.thread()
        s.gate.close()
        running = s.start(thread, "running").json()
        s.gate.wait_entered(1)
        queued = s.start(thread, "queued").json()
        assert s.run(thread, queued["run_id"])["status"] == "pending"
        last = s.start(thread, "last", multitask_strategy="interrupt").json()
        s.join(thread, last["run_id"])
        statuses = [s.run(thread, r["run_id"])["status"] for r in (running, queued, last)]
        texts = s.texts(thread)
    assert statuses == ["interrupted", "interrupted", "success"]
    assert "queued" not in texts  # it never ran
    assert texts[-4:] == ["last", "", "held last", "done: held last"]


def test_a_cancel_with_rollback_puts_the_thread_back_at_once() -> None:
    with served() as s:
        thread = s.thread()
        s.join(thread, s.start(thread, "kept").json()["run_id"])
        s.gate.close()
        dropped = s.start(thread, "dropped").json()
        s.gate.wait_entered(2)
        where = f"/threads/{thread}/runs/{dropped['run_id']}/cancel?wait=1&action=rollback"
        assert s.http.post(where).status_code == 200
        at_once = s.texts(thread)  # no run after it yet
        status = s.http.get(f"/threads/{thread}").json()["status"]
        s.join(thread, s.start(thread, "next").json()["run_id"])
        texts = s.texts(thread)
    assert at_once == KEPT
    assert status == "idle"
    assert texts == [*KEPT, "next", "", "held next", "done: held next"]


def test_rolling_back_a_thread_s_first_run_leaves_it_empty() -> None:
    with served() as s:
        thread = s.thread()
        s.gate.close()
        dropped = s.start(thread, "dropped").json()
        s.gate.wait_entered(1)
        where = f"/threads/{thread}/runs/{dropped['run_id']}/cancel?wait=1&action=rollback"
        assert s.http.post(where).status_code == 200
        at_once = s.texts(thread)
        s.join(thread, s.start(thread, "next").json()["run_id"])
        texts = s.texts(thread)
    assert at_once == []
    assert texts == ["next", "", "held next", "done: held next"]


def test_the_rollback_strategy_on_a_thread_s_first_run() -> None:
    with served() as s:
        thread = s.thread()
        s.gate.close()
        dropped = s.start(thread, "dropped").json()
        s.gate.wait_entered(1)
        last = s.start(thread, "last", multitask_strategy="rollback").json()
        s.join(thread, last["run_id"])
        texts = s.texts(thread)
        status = s.run(thread, dropped["run_id"])["status"]
    assert status == "interrupted"
    assert texts == ["last", "", "held last", "done: held last"]
