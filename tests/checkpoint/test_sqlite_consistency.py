"""Consistent reads: a SqliteSaver reads a thread in one read transaction, so another
connection (another process) that writes and prunes the thread at the same time can never
make a read fail or mix two states."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from checkpoint import Checkpoint, SqliteSaver
from graph_agent import RunnableConfig

from ._graphs import chat_graph


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[SqliteSaver, SqliteSaver]]:
    """A reader and a writer that keeps one checkpoint per thread: two connections to one
    file, as two processes have."""
    path = tmp_path / "shared.sqlite"
    with SqliteSaver(path) as reader, SqliteSaver(path, max_retained=1) as writer:
        yield reader, writer


def write_between_statements(
    reader: SqliteSaver, table: str, write: Callable[[], None]
) -> list[str]:
    """Make ``write`` run (on the other connection) when the reader starts its first query
    of ``table``: after it found the checkpoint it reads, before it reads its values."""
    done: list[str] = []

    def trace(statement: str) -> None:
        if f"FROM {table}" in statement and not done:
            done.append(statement)
            write()

    reader._conn.set_trace_callback(trace)
    return done


def consistent(checkpoint: Checkpoint | None) -> None:
    """Its messages and its count of turns are of one state: a checkpoint after a reply,
    or after the input of the next turn."""
    assert checkpoint is not None
    turns = checkpoint.values["turns"]
    replied = [text for t in range(turns) for text in (f"turn {t}", f"reply to turn {t}")]
    assert checkpoint.values["messages"] in (replied, [*replied, f"turn {turns}"])


@pytest.mark.parametrize("table", ["vals", "items"])
def test_get_reads_one_state_while_another_connection_prunes(tmp_path: Path, table: str) -> None:
    path = tmp_path / "shared.sqlite"
    # a reader that holds no head: every get reads the whole head
    with SqliteSaver(path, cache_threads=0) as reader, SqliteSaver(path, max_retained=1) as writer:
        app = chat_graph(writer)
        config = RunnableConfig(thread_id="t")
        app.invoke({"messages": ["turn 0"]}, config)
        before = reader.get("t")
        consistent(before)
        # While the reader is between its queries, the writer adds a turn and prunes the
        # checkpoint the reader is reading, with the value ('turns') it holds.
        done = write_between_statements(
            reader, table, lambda: app.invoke({"messages": ["turn 1"]}, config)
        )
        during = reader.get("t")
        assert done, "the write did not happen during the read"
        reader._conn.set_trace_callback(None)
        assert during is not None and during.id == before.id  # the state when the read began
        consistent(during)
        after = reader.get("t")
        consistent(after)
        assert after is not None and after.values["turns"] == 2 and after.id != before.id


@pytest.mark.parametrize("table", ["vals", "items"])
def test_reading_only_what_is_new_sees_one_state_while_another_connection_prunes(
    pair: tuple[SqliteSaver, SqliteSaver], table: str
) -> None:
    """The reader holds the head it read; the writer moves the thread on, and moves it again
    (pruning the head being read) while the reader reads what the first move added."""
    reader, writer = pair
    app = chat_graph(writer)
    config = RunnableConfig(thread_id="t")
    app.invoke({"messages": ["turn 0"]}, config)
    consistent(reader.get("t"))
    app.invoke({"messages": ["turn 1"]}, config)
    moved = writer.get("t")
    assert moved is not None
    done = write_between_statements(
        reader, table, lambda: app.invoke({"messages": ["turn 2"]}, config)
    )
    during = reader.get("t")
    assert done, "the write did not happen during the read"
    reader._conn.set_trace_callback(None)
    assert during is not None and during.id == moved.id  # the state when the read began
    consistent(during)
    assert during.values == moved.values
    after = reader.get("t")
    consistent(after)
    assert after is not None and after.values["turns"] == 3


def test_list_reads_one_state_while_another_connection_prunes(
    pair: tuple[SqliteSaver, SqliteSaver],
) -> None:
    reader, _ = pair
    path = reader.path
    with SqliteSaver(path, max_retained=3) as writer:
        app = chat_graph(writer)
        config = RunnableConfig(thread_id="l")
        for turn in range(2):
            app.invoke({"messages": [f"turn {turn}"]}, config)
        expected = [c.id for c in reader.list("l")]
        assert len(expected) == 3
        done = write_between_statements(
            reader, "vals", lambda: app.invoke({"messages": ["turn 2"]}, config)
        )
        listed = list(reader.list("l"))
        reader._conn.set_trace_callback(None)
        assert done
        assert [c.id for c in listed] == expected  # all of them, as they were
        for checkpoint in listed:
            if "turns" in checkpoint.values:
                consistent(checkpoint)


def test_a_reader_in_a_loop_never_fails_while_a_writer_prunes(tmp_path: Path) -> None:
    """Two connections in two threads: one writes turns with max_retained=1 (each write
    deletes what the previous head held), the other reads the head and the history."""
    path = tmp_path / "race.sqlite"
    errors: list[BaseException] = []
    stop = threading.Event()
    with SqliteSaver(path) as reader, SqliteSaver(path, max_retained=1) as writer:
        app = chat_graph(writer)
        config = RunnableConfig(thread_id="r")
        app.invoke({"messages": ["turn 0"]}, config)

        def read() -> None:
            try:
                while not stop.is_set():
                    consistent(reader.get("r"))
                    for checkpoint in reader.list("r"):
                        assert checkpoint.values["messages"]
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=read)
        thread.start()
        try:
            for turn in range(1, 60):
                app.invoke({"messages": [f"turn {turn}"]}, config)
        finally:
            stop.set()
            thread.join()
    assert errors == []
