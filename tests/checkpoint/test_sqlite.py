"""SqliteSaver: restarts, incremental rows, forks, rewrites, retention, two writers."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from checkpoint import (
    CheckpointConflictError,
    CheckpointError,
    SqliteSaver,
    UnserializableValueError,
)
from checkpoint.errors import CheckpointPathError
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


@pytest.fixture
def open_saver(tmp_path: Path) -> Iterator[Callable[..., SqliteSaver]]:
    """Opens savers on files in ``tmp_path`` and closes them after the test."""
    opened: list[SqliteSaver] = []

    def open_saver(name: str, **options: Any) -> SqliteSaver:
        saver = SqliteSaver(tmp_path / name, **options)
        opened.append(saver)
        return saver

    yield open_saver
    for saver in opened:
        saver.close()


def test_a_thread_survives_a_restart(tmp_path):
    path = tmp_path / "threads.sqlite"
    with SqliteSaver(path) as saver:
        chat_graph(saver).invoke({"messages": ["hello"]}, {"thread_id": "t"})
    with SqliteSaver(path) as reopened:
        result = chat_graph(reopened).invoke({"messages": ["again"]}, {"thread_id": "t"})
    assert result["messages"] == ["hello", "reply to hello", "again", "reply to again"]


def test_bytes_written_per_turn_stay_flat(tmp_path, open_saver):
    saver = open_saver("flat.sqlite")
    app = chat_graph(saver)
    sizes = []
    for turn in range(200):
        app.invoke({"messages": [f"turn {turn:03d}"]}, {"thread_id": "long"})
        sizes.append(saver.stored_bytes("long"))
    early, late = sizes[10] - sizes[9], sizes[199] - sizes[198]
    assert late <= early * 1.2, (early, late)
    assert len(saver.get("long").values["messages"]) == 400


def test_reading_costs_the_same_number_of_queries_however_long_the_thread(tmp_path, open_saver):
    saver = open_saver("reads.sqlite")
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


def test_fork_from_an_old_checkpoint_keeps_both_branches(tmp_path, open_saver):
    saver = open_saver("fork.sqlite")
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


def test_a_rewritten_list_can_grow_again(tmp_path, open_saver):
    saver = open_saver("rewrite.sqlite")
    graph = StateGraph(key_strategies={"log": KeyStrategy.APPEND})
    graph.add_node("trim", lambda s: {"log": Overwrite(s["log"][-1:])}).add_node(
        "add", lambda s: {"log": ["added"]}
    )
    graph.add_edge(START, "trim").add_edge("trim", "add").add_edge("add", END)
    app = graph.compile(saver=saver)
    assert app.invoke({"log": [1, 2, 3]}, {"thread_id": "r"})["log"] == [3, "added"]
    assert saver.get("r").values["log"] == [3, "added"]


def test_interrupts_and_resume_values_are_stored(tmp_path, open_saver):
    saver = open_saver("pause.sqlite")
    graph = StateGraph().add_node("ask", lambda s: {"answer": interrupt({"q": "ok?"})})
    graph.add_edge(START, "ask").add_edge("ask", END)
    app = graph.compile(saver=saver)
    app.invoke({}, {"thread_id": "p"})
    reopened = graph.compile(saver=open_saver("pause.sqlite"))
    assert reopened.get_state({"thread_id": "p"}).interrupts[0].value == {"q": "ok?"}
    assert reopened.invoke(Command(resume="yes"), {"thread_id": "p"})["answer"] == "yes"


def test_max_retained_keeps_the_latest_state(tmp_path, open_saver):
    saver = open_saver("retain.sqlite", max_retained=3)
    app = chat_graph(saver)
    for turn in range(10):
        app.invoke({"messages": [f"t{turn}"]}, {"thread_id": "m"})
    assert len(list(saver.list("m"))) == 3
    assert len(saver.get("m").values["messages"]) == 20


def test_two_savers_on_one_file_cannot_both_extend_the_same_head(tmp_path, open_saver):
    first, second = open_saver("shared.sqlite"), open_saver("shared.sqlite")
    app1, app2 = chat_graph(first), chat_graph(second)
    app1.invoke({"messages": ["one"]}, {"thread_id": "s"})
    stale = second.get("s")
    app1.invoke({"messages": ["two"]}, {"thread_id": "s"})
    from checkpoint import Checkpoint, created_at_of, new_checkpoint_id

    cid = new_checkpoint_id()
    late = Checkpoint(cid, "s", stale.id, stale.step + 1, (), {"messages": []}, created_at_of(cid))
    with pytest.raises(CheckpointConflictError):
        second.put(late)
    assert app2.get_state({"thread_id": "s"}).values["messages"][-1] == "reply to two"


def test_concurrent_threads_in_one_process(tmp_path, open_saver):
    saver = open_saver("many.sqlite")
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


def test_an_unserializable_value_writes_nothing(tmp_path, open_saver):
    saver = open_saver("bad.sqlite")
    with sqlite3.connect(":memory:") as conn:
        graph = StateGraph().add_node("bad", lambda s: {"conn": conn})
        graph.add_edge(START, "bad").add_edge("bad", END)
        with pytest.raises(UnserializableValueError, match="conn"):
            graph.compile(saver=saver).invoke({"x": 1}, {"thread_id": "b"})
    conn.close()
    head = saver.get("b")  # the input, checkpointed first; nothing of the failed step
    assert head is not None and head.metadata["source"] == "input" and "conn" not in head.values


def test_from_conn_string_accepts_uris(tmp_path):
    with SqliteSaver.from_conn_string(f"file:{tmp_path / 'uri.sqlite'}?mode=rwc") as saver:
        chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "u"})
        assert saver.get("u").values["turns"] == 1
    with SqliteSaver.from_conn_string("file:memdb?mode=memory&cache=shared") as saver:
        chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "m"})
        assert saver.get("m").values["turns"] == 1
    with pytest.raises(ValueError, match="max_retained"):
        SqliteSaver(tmp_path / "x.sqlite", max_retained=0)


def test_retention_bounds_what_is_stored(tmp_path, open_saver):
    saver = open_saver("bounded.sqlite", max_retained=2)
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


# --- opening, closing, errors that name the file -------------------------------------------


def test_a_path_in_a_missing_directory_says_how_to_fix_it(tmp_path):
    missing = tmp_path / "no" / "such" / "dir"
    for path, uri in ((missing / "threads.sqlite", False), (f"file:{missing}/t.db?mode=rwc", True)):
        with pytest.raises(CheckpointPathError) as info:
            SqliteSaver(path, uri=uri)
        error = info.value
        assert isinstance(error, CheckpointError) and isinstance(error, FileNotFoundError)
        assert error.path == str(path) and error.filename == str(path)
        assert str(path) in str(error) and str(missing) in str(error)
        assert "does not exist" in str(error) and "os.makedirs" in str(error)
    with pytest.raises(CheckpointPathError, match="expanduser"):
        SqliteSaver("~/no-such-dir-for-graph-agent-tests/threads.sqlite")
    assert not missing.exists()


def test_a_file_that_is_not_a_database_names_the_path(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"these are not the checkpoints you are looking for" * 100)
    with pytest.raises(CheckpointError) as info:
        SqliteSaver(path)
    assert str(path) in str(info.value) and "not a SQLite checkpoint database" in str(info.value)
    with pytest.raises(CheckpointError, match="names a file"):
        SqliteSaver(tmp_path)  # a directory


def test_close_is_idempotent_and_a_closed_saver_says_so(tmp_path):
    saver = SqliteSaver(tmp_path / "closed.sqlite")
    chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "c"})
    saver.close()
    saver.close()
    with pytest.raises(CheckpointError, match=r"closed.sqlite.*is closed.*open a new SqliteSaver"):
        saver.get("c")
    with pytest.raises(CheckpointError, match="is closed"):
        list(saver.list("c"))
    with SqliteSaver(tmp_path / "closed.sqlite") as reopened:
        assert reopened.get("c").values["turns"] == 1


def test_async_context_manager_and_aclose(tmp_path):
    async def main() -> tuple[int, SqliteSaver, SqliteSaver]:
        async with SqliteSaver(tmp_path / "async.sqlite") as saver:
            out = await chat_graph(saver).ainvoke({"messages": ["hi"]}, {"thread_id": "a"})
        other = SqliteSaver(tmp_path / "async.sqlite")
        assert (await other.aget("a")).values["turns"] == 1
        await other.aclose()
        return out["turns"], saver, other

    turns, saver, other = asyncio.run(main())
    assert turns == 1
    for closed in (saver, other):
        with pytest.raises(CheckpointError, match="is closed"):
            closed.get("a")


def test_an_unclosed_saver_warns_and_closes_its_connection(tmp_path):
    saver = SqliteSaver(tmp_path / "leak.sqlite")
    conn = saver._conn
    with pytest.warns(ResourceWarning, match=r"unclosed SqliteSaver\(.*leak.sqlite"):
        del saver
        gc.collect()
    with pytest.raises(sqlite3.ProgrammingError):
        conn.execute("SELECT 1")


def test_a_sqlite_error_names_the_file_and_the_thread(tmp_path, open_saver):
    saver = open_saver("locked.sqlite", timeout=0.01)
    chat_graph(saver).invoke({"messages": ["hi"]}, {"thread_id": "l"})
    with sqlite3.connect(tmp_path / "locked.sqlite") as other:
        other.execute("BEGIN EXCLUSIVE")
        try:
            with pytest.raises(CheckpointError) as info:
                chat_graph(saver).invoke({"messages": ["again"]}, {"thread_id": "l"})
        finally:
            other.rollback()
    other.close()
    message = str(info.value)
    assert "locked.sqlite" in message and "'l'" in message and "timeout=" in message


# --- a file made by an earlier version ------------------------------------------------------

# The schema before checkpoints kept the order of the writes (seq).
_OLD_SCHEMA = """
CREATE TABLE threads (
    thread_id TEXT PRIMARY KEY, head TEXT NOT NULL, next_list INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE checkpoints (
    thread_id TEXT NOT NULL, checkpoint_id TEXT NOT NULL, parent_id TEXT, step INTEGER NOT NULL,
    header BLOB NOT NULL, idx BLOB NOT NULL, PRIMARY KEY (thread_id, checkpoint_id)
) WITHOUT ROWID;
CREATE TABLE vals (
    thread_id TEXT NOT NULL, checkpoint_id TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_id, key)
) WITHOUT ROWID;
CREATE TABLE lists (
    thread_id TEXT NOT NULL, list_no INTEGER NOT NULL, length INTEGER NOT NULL,
    PRIMARY KEY (thread_id, list_no)
) WITHOUT ROWID;
CREATE TABLE items (
    thread_id TEXT NOT NULL, list_no INTEGER NOT NULL, pos INTEGER NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY (thread_id, list_no, pos)
) WITHOUT ROWID;
"""


def test_a_file_made_before_write_order_was_kept_is_migrated(tmp_path):
    new, old = tmp_path / "new.sqlite", tmp_path / "old.sqlite"
    with SqliteSaver(new) as saver:
        app = chat_graph(saver)
        for turn in range(3):
            app.invoke({"messages": [f"t{turn}"]}, {"thread_id": "o"})
        expected = [c.id for c in saver.list("o")]
    # the same rows in a file whose checkpoints table has no write order, as before
    with sqlite3.connect(old) as db:
        db.executescript(_OLD_SCHEMA)
        db.execute("ATTACH DATABASE ? AS new", (str(new),))
        for table in ("threads", "vals", "lists", "items"):
            db.execute(f"INSERT INTO {table} SELECT * FROM new.{table}")
        db.execute(
            "INSERT INTO checkpoints SELECT thread_id, checkpoint_id, parent_id, step, header, "
            "idx FROM new.checkpoints"
        )
    db.close()
    with SqliteSaver(old, max_retained=4) as saver:
        assert [c.id for c in saver.list("o")] == expected
        app = chat_graph(saver)
        result = app.invoke({"messages": ["t3"]}, {"thread_id": "o"})
        assert result["turns"] == 4
        history = [c.id for c in saver.list("o")]  # the new turn's two, then the newest old
        assert len(history) == 4 and history[2:] == expected[:2]
        assert saver.get("o").id == history[0]
