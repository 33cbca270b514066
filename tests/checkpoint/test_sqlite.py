"""SqliteSaver: restarts, incremental rows, forks, rewrites, retention, two writers."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from checkpoint import CheckpointConflictError, SqliteSaver, UnserializableValueError
from graph_agent import (
    END,
    START,
    Command,
    KeyStrategy,
    Overwrite,
    RunnableConfig,
    StateGraph,
    interrupt,
)

from ._graphs import chat_graph


def test_a_thread_survives_a_restart(tmp_path):
    path = tmp_path / "threads.sqlite"
    with SqliteSaver(path) as saver:
        chat_graph(saver).invoke({"messages": ["hello"]}, {"thread_id": "t"})
    with SqliteSaver(path) as reopened:
        result = chat_graph(reopened).invoke({"messages": ["again"]}, {"thread_id": "t"})
    assert result["messages"] == ["hello", "reply to hello", "again", "reply to again"]


def test_bytes_written_per_turn_stay_flat(tmp_path):
    saver = SqliteSaver(tmp_path / "flat.sqlite")
    app = chat_graph(saver)
    sizes = []
    for turn in range(200):
        app.invoke({"messages": [f"turn {turn:03d}"]}, {"thread_id": "long"})
        sizes.append(saver.stored_bytes("long"))
    early, late = sizes[10] - sizes[9], sizes[199] - sizes[198]
    assert late <= early * 1.2, (early, late)
    assert len(saver.get("long").values["messages"]) == 400


def test_reading_costs_the_same_number_of_queries_however_long_the_thread(tmp_path):
    saver = SqliteSaver(tmp_path / "reads.sqlite")
    app = chat_graph(saver)
    counts = []
    for turns in (5, 100):
        while len(list(saver.list("q"))) < turns:
            app.invoke({"messages": ["x"]}, {"thread_id": "q"})
        statements: list[str] = []
        saver._conn.set_trace_callback(statements.append)
        saver.get("q")
        saver._conn.set_trace_callback(None)
        counts.append(len(statements))
    assert counts[0] == counts[1]


def test_fork_from_an_old_checkpoint_keeps_both_branches(tmp_path):
    saver = SqliteSaver(tmp_path / "fork.sqlite")
    app = chat_graph(saver)
    config = RunnableConfig(thread_id="f")
    for text in ("a", "b", "c"):
        app.invoke({"messages": [text]}, config)
    history = list(app.get_state_history(config))
    old = history[2]  # after "b" (history[1] is the input of "c")
    forked = app.invoke({"messages": ["x"]}, old.config)
    assert forked["messages"] == ["a", "reply to a", "b", "reply to b", "x", "reply to x"]
    assert app.get_state(history[0].config).values["messages"][-1] == "reply to c"
    again = app.invoke({"messages": ["y"]}, config)  # the fork is now the head
    assert again["messages"][4:] == ["x", "reply to x", "y", "reply to y"]


def test_a_rewritten_list_can_grow_again(tmp_path):
    saver = SqliteSaver(tmp_path / "rewrite.sqlite")
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("trim", lambda s: {"log": Overwrite(s["log"][-1:])}).add_node(
        "add", lambda s: {"log": ["added"]}
    )
    graph.add_edge(START, "trim").add_edge("trim", "add").add_edge("add", END)
    app = graph.compile(saver=saver)
    assert app.invoke({"log": [1, 2, 3]}, {"thread_id": "r"})["log"] == [3, "added"]
    assert saver.get("r").values["log"] == [3, "added"]


def test_interrupts_and_resume_values_are_stored(tmp_path):
    saver = SqliteSaver(tmp_path / "pause.sqlite")
    graph = StateGraph().add_node("ask", lambda s: {"answer": interrupt({"q": "ok?"})})
    graph.add_edge(START, "ask").add_edge("ask", END)
    app = graph.compile(saver=saver)
    app.invoke({}, {"thread_id": "p"})
    reopened = graph.compile(saver=SqliteSaver(tmp_path / "pause.sqlite"))
    assert reopened.get_state({"thread_id": "p"}).interrupts[0].value == {"q": "ok?"}
    assert reopened.invoke(Command(resume="yes"), {"thread_id": "p"})["answer"] == "yes"


def test_max_retained_keeps_the_latest_state(tmp_path):
    saver = SqliteSaver(tmp_path / "retain.sqlite", max_retained=3)
    app = chat_graph(saver)
    for turn in range(10):
        app.invoke({"messages": [f"t{turn}"]}, {"thread_id": "m"})
    assert len(list(saver.list("m"))) == 3
    assert len(saver.get("m").values["messages"]) == 20


def test_two_savers_on_one_file_cannot_both_extend_the_same_head(tmp_path):
    path = tmp_path / "shared.sqlite"
    first, second = SqliteSaver(path), SqliteSaver(path)
    app1, app2 = chat_graph(first), chat_graph(second)
    app1.invoke({"messages": ["one"]}, {"thread_id": "s"})
    stale = second.get("s")
    app1.invoke({"messages": ["two"]}, {"thread_id": "s"})
    from checkpoint import Checkpoint
    from checkpoint._ids import created_at_of, new_checkpoint_id

    cid = new_checkpoint_id()
    late = Checkpoint(cid, "s", stale.id, stale.step + 1, (), {"messages": []}, created_at_of(cid))
    with pytest.raises(CheckpointConflictError):
        second.put(late)
    assert app2.get_state({"thread_id": "s"}).values["messages"][-1] == "reply to two"


def test_concurrent_threads_in_one_process(tmp_path):
    saver = SqliteSaver(tmp_path / "many.sqlite")
    app = chat_graph(saver)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for turn in range(10):
                app.invoke({"messages": [f"{n}-{turn}"]}, {"thread_id": f"w{n}"})
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert all(len(saver.get(f"w{n}").values["messages"]) == 20 for n in range(6))


def test_an_unserializable_value_writes_nothing(tmp_path):
    saver = SqliteSaver(tmp_path / "bad.sqlite")
    graph = StateGraph().add_node("bad", lambda s: {"conn": sqlite3.connect(":memory:")})
    graph.add_edge(START, "bad").add_edge("bad", END)
    with pytest.raises(UnserializableValueError, match="conn"):
        graph.compile(saver=saver).invoke({"x": 1}, {"thread_id": "b"})
    head = saver.get("b")  # the input, checkpointed first; nothing of the failed step
    assert head is not None and head.metadata["source"] == "input" and "conn" not in head.values


def test_from_conn_string_accepts_uris(tmp_path):
    saver = SqliteSaver.from_conn_string(f"file:{tmp_path / 'uri.sqlite'}?mode=rwc")
    chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "u"})
    assert saver.get("u").values["turns"] == 1
    with pytest.raises(ValueError, match="max_retained"):
        SqliteSaver(tmp_path / "x.sqlite", max_retained=0)


def test_retention_bounds_what_is_stored(tmp_path):
    saver = SqliteSaver(tmp_path / "bounded.sqlite", max_retained=2)
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node(
        "trim",
        lambda s: {"log": Overwrite([*s["log"][-2:], "x"]), "every_third": len(s["log"]) // 3},
    )
    graph.add_edge(START, "trim").add_edge("trim", END)
    app = graph.compile(saver=saver)
    for n in range(50):
        app.invoke({"log": [n]}, {"thread_id": "b"})
    assert saver.get("b").values["log"][-1] == "x"

    def count(table: str) -> int:
        return saver._conn.execute(
            f"SELECT count(*) FROM {table} WHERE thread_id = 'b'"
        ).fetchone()[0]

    assert count("checkpoints") == 2
    assert count("vals") <= 2 * 2 and count("lists") <= 2 and count("items") <= 2 * 4
