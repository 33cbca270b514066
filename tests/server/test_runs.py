"""The server's runs as a client sees them over HTTP: event ids and rejoining, one run at a
time per thread and the multitask strategies, statuses, a run answered once its input is
stored, failures and cancels, each read from the run's status, the thread's state and
history, and the run's stream."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoint import MemorySaver
from graph_agent import END, START, StateGraph
from graph_agent.agent._unanswered import CANCELLED_TEXT

from .gate_kit import served


def test_every_event_has_an_id_unique_and_ordered_and_a_rejoin_gets_each_later_one_once() -> None:
    with served() as s:
        thread = s.thread()
        s.gate.close()
        run = s.start(thread, "a", stream_mode=["values", "updates"]).json()
        s.gate.wait_entered(1)
        early = s.http.stream("GET", f"/threads/{thread}/runs/{run['run_id']}/stream", headers={})
        with early as answer:  # a client reads the first three events, then drops
            lines = answer.iter_lines()
            first: list[str] = []
            for line in lines:
                if line.startswith("id: "):
                    first.append(line.removeprefix("id: "))
                if len(first) == 3:
                    break
        s.gate.open()
        s.join(thread, run["run_id"])
        everything = [i for i, _, _ in s.events(thread, run["run_id"])]
        later = [i for i, _, _ in s.events(thread, run["run_id"], last_event_id="3")]
        from_the_start = [i for i, _, _ in s.events(thread, run["run_id"], last_event_id="-1")]
    assert first == ["1", "2", "3"]
    assert everything == [str(n) for n in range(1, len(everything) + 1)]  # 1, 2, 3, ...
    assert len(everything) > 4
    assert later == everything[3:]  # nothing twice, nothing lost
    assert from_the_start == everything  # useStream's "from the start"


def test_an_id_the_run_never_sent_is_refused() -> None:
    with served() as s:
        thread = s.thread()
        run = s.start(thread, "a").json()
        s.join(thread, run["run_id"])
        count = len(s.events(thread, run["run_id"]))
        where = f"/threads/{thread}/runs/{run['run_id']}/stream"
        for wrong in (str(count + 5), "abc"):
            answer = s.http.get(where, headers={"Last-Event-ID": wrong})
            assert answer.status_code == 400, (wrong, answer.text)
            assert "not an id of this run" in answer.json()["detail"]


def test_a_run_is_answered_once_its_input_is_stored_not_when_it_ends() -> None:
    with served() as s:
        thread = s.thread()
        s.gate.close()
        answer = s.start(thread, "keep me")
        assert answer.status_code == 200, answer.text
        run = answer.json()
        assert run["status"] in ("pending", "running")  # answered before it ended
        assert s.texts(thread)[0] == "keep me"  # and its input is stored already
        assert s.http.get(f"/threads/{thread}").json()["status"] == "busy"
        s.gate.wait_entered(1)
        assert s.run(thread, run["run_id"])["status"] == "running"
        s.gate.open()
        s.join(thread, run["run_id"])
        assert s.run(thread, run["run_id"])["status"] == "success"
        assert s.texts(thread)[-1] == "done: held keep me"
        assert s.http.get(f"/threads/{thread}").json()["status"] == "idle"


def test_reject_refuses_a_second_run_on_a_busy_thread() -> None:
    with served() as s:
        thread, other = s.thread(), s.thread()
        s.gate.close()
        first = s.start(thread, "first").json()
        refused = s.start(thread, "second", multitask_strategy="reject")
        assert refused.status_code == 409
        assert first["run_id"] in refused.json()["detail"]  # names the run it waits for
        s.gate.open()
        elsewhere = s.start(other, "elsewhere", multitask_strategy="reject")
        assert elsewhere.status_code == 200  # another thread is not busy
        s.join(thread, first["run_id"])
        s.join(other, elsewhere.json()["run_id"])
        assert s.texts(thread) == ["first", "", "held first", "done: held first"]  # never run
        runs = s.http.get(f"/threads/{thread}/runs").json()
        assert [r["run_id"] for r in runs] == [first["run_id"]]


@pytest.mark.parametrize("strategy", [None, "enqueue"], ids=["default", "enqueue"])
def test_enqueue_runs_the_second_after_the_first(strategy: str | None) -> None:
    with served() as s:
        thread = s.thread()
        s.gate.close()
        first = s.start(thread, "first").json()
        s.gate.wait_entered(1)
        fields = {} if strategy is None else {"multitask_strategy": strategy}
        second = s.start(thread, "second", **fields).json()
        assert s.run(thread, second["run_id"])["status"] == "pending"  # waits its turn
        assert s.run(thread, first["run_id"])["status"] == "running"
        s.gate.open()
        s.join(thread, second["run_id"])
        assert s.run(thread, first["run_id"])["status"] == "success"
        assert s.run(thread, second["run_id"])["status"] == "success"
        assert s.texts(thread) == [
            "first", "", "held first", "done: held first",
            "second", "", "held second", "done: held second",
        ]  # fmt: skip
        newest_first = [r["run_id"] for r in s.http.get(f"/threads/{thread}/runs").json()]
        assert newest_first == [second["run_id"], first["run_id"]]


def test_interrupt_stops_the_running_one_which_keeps_its_step() -> None:
    with served() as s:
        thread = s.thread()
        s.gate.close()
        first = s.start(thread, "first").json()
        s.gate.wait_entered(1)
        second = s.start(thread, "second", multitask_strategy="interrupt").json()
        s.join(thread, second["run_id"])
        assert s.run(thread, first["run_id"])["status"] == "interrupted"
        assert s.run(thread, second["run_id"])["status"] == "success"
        # the first run stopped at once, its tool call answered as cancelled (the thread
        # stays valid for a provider): no answer of the model after it; the second went on
        assert s.texts(thread) == [
            "first", "", CANCELLED_TEXT,
            "second", "", "held second", "done: held second",
        ]  # fmt: skip


def test_rollback_starts_the_thread_again_where_the_cancelled_run_began() -> None:
    with served() as s:
        thread = s.thread()
        done = s.start(thread, "kept").json()
        s.join(thread, done["run_id"])
        before = s.http.post(f"/threads/{thread}/history", json={}).json()
        s.gate.close()
        dropped = s.start(thread, "dropped").json()
        s.gate.wait_entered(2)  # the first run's call, then this one's: it stored its input
        assert "dropped" in s.texts(thread)
        last = s.start(thread, "last", multitask_strategy="rollback").json()
        s.join(thread, last["run_id"])
        assert s.run(thread, dropped["run_id"])["status"] == "interrupted"
        assert s.run(thread, last["run_id"])["status"] == "success"
        texts = s.texts(thread)
        history = s.http.post(f"/threads/{thread}/history", json={"limit": 100}).json()
    assert texts == [
        "kept", "", "held kept", "done: held kept",
        "last", "", "held last", "done: held last",
    ]  # fmt: skip
    # the new run continues from the checkpoint the rolled-back run started from
    assert before[0]["checkpoint"]["checkpoint_id"] in {
        h["parent_checkpoint"]["checkpoint_id"] for h in history if h["parent_checkpoint"]
    }
    assert not any(
        "dropped" in [m["content"] for m in h["values"]["messages"]]
        for h in history
        if h["values"] and any(m["content"] == "last" for m in h["values"]["messages"])
    )


def test_a_cancel_with_rollback_sends_the_next_run_back_to_where_the_cancelled_one_began() -> None:
    with served() as s:
        thread = s.thread()
        s.join(thread, s.start(thread, "kept").json()["run_id"])
        s.gate.close()
        dropped = s.start(thread, "dropped").json()
        s.gate.wait_entered(2)
        where = f"/threads/{thread}/runs/{dropped['run_id']}/cancel?wait=1&action=rollback"
        assert s.http.post(where).status_code == 200
        assert s.run(thread, dropped["run_id"])["status"] == "interrupted"
        s.join(thread, s.start(thread, "next").json()["run_id"])
        texts = s.texts(thread)
    assert texts == [
        "kept", "", "held kept", "done: held kept",
        "next", "", "held next", "done: held next",
    ]  # fmt: skip


def failing_graph() -> Any:
    def explode(state: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("model down")

    graph = StateGraph().add_node("explode", explode)
    graph.add_edge(START, "explode").add_edge("explode", END)
    return graph.compile(saver=MemorySaver())


def test_a_failing_run_ends_in_error_with_one_error_event_and_its_stream_ends() -> None:
    with served(failing=failing_graph()) as s:
        thread = s.thread()
        run = s.http.post(
            f"/threads/{thread}/runs", json={"assistant_id": "failing", "input": {"x": 1}}
        ).json()
        joined = s.join(thread, run["run_id"])
        status = s.run(thread, run["run_id"])["status"]
        events = s.events(thread, run["run_id"])  # returns: the stream ended
        thread_status = s.http.get(f"/threads/{thread}").json()["status"]
    assert status == "error" and thread_status == "error"
    assert joined["__error__"] == {"error": "RuntimeError", "message": "model down"}
    errors = [data for _, event, data in events if event == "error"]
    assert errors == [{"error": "RuntimeError", "message": "model down"}]  # reported once
    assert events[-1][1] == "error"


def test_a_cancelled_run_is_interrupted_and_its_stream_ends() -> None:
    with served() as s:
        thread = s.thread()
        s.gate.close()
        run = s.start(thread, "stop me", stream_mode="values").json()
        s.gate.wait_entered(1)
        cancelled = s.http.post(f"/threads/{thread}/runs/{run['run_id']}/cancel?wait=1")
        assert cancelled.status_code == 200, cancelled.text
        answered = [m["content"] for m in cancelled.json()["messages"]]  # the values, stopped
        assert s.run(thread, run["run_id"])["status"] == "interrupted"
        events = s.events(thread, run["run_id"])  # returns: the stream ended
        texts = s.texts(thread)
        assert s.http.get(f"/threads/{thread}").json()["status"] == "interrupted"
        resumed = s.http.post(
            f"/threads/{thread}/runs/wait", json={"assistant_id": "held", "input": None}
        ).json()  # a run with input null continues it
    assert texts == ["stop me", "", CANCELLED_TEXT]  # its call answered, nothing after it
    assert answered == texts
    last_values = [data for _, event, data in events if event == "values"][-1]
    assert [m["content"] for m in last_values["messages"]] == texts  # the stream ends on it
    assert [m["content"] for m in resumed["messages"]] == [*texts, f"done: {CANCELLED_TEXT}"]
