"""``put_writes``: a running step's finished work stored as pending writes of the checkpoint
it started from, on every saver in ``conftest.SAVERS`` (the engine uses it on the durable
ones; docs/checkpoints.md, "Pending writes")."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from typing import Any

import pytest

from checkpoint import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointConflictError,
    CheckpointDelta,
    CheckpointNotFoundError,
    MemorySaver,
    SqliteSaver,
    UnserializableValueError,
)
from checkpoint.base import stores_writes

from .conftest import SAVERS
from .test_saver_contract import make


@pytest.fixture(params=sorted(SAVERS))
def any_saver(request: pytest.FixtureRequest) -> BaseCheckpointSaver:
    return SAVERS[request.param](request)


def _two_steps(saver: BaseCheckpointSaver, thread: str = "t") -> tuple[Checkpoint, Checkpoint]:
    first = make(thread, None, 0, {"log": ["a"]}, next_nodes=("x",), metadata={"source": "input"})
    saver.put(first, CheckpointDelta(appended={"log": ["a"]}))
    second = make(
        thread,
        first.id,
        1,
        {"log": ["a", "b"]},
        next_nodes=("y", "z"),
        metadata={"source": "loop"},
        interrupts=({"id": "i1", "node": "y", "when": "during", "value": "ok?", "ns": []},),
    )
    saver.put(second, CheckpointDelta(appended={"log": ["b"]}))
    return first, second


def _with_writes(checkpoint: Checkpoint, n: int) -> Checkpoint:
    return dataclasses.replace(
        checkpoint,
        pending_writes={f"task-{i}": ["y", {"log": [f"w{i}"]}, None] for i in range(n)},
        resume_values={"i1": ("yes",)},
        interrupts=(),
    )


def test_writes_replace_the_record_and_add_no_checkpoint(any_saver: BaseCheckpointSaver) -> None:
    first, second = _two_steps(any_saver)
    any_saver.get("t")  # a saver that holds the head decoded holds it now
    any_saver.put_writes(_with_writes(second, 1))
    any_saver.put_writes(_with_writes(second, 2))  # each write holds all finished so far

    head = any_saver.get("t")
    assert head is not None and head.id == second.id
    assert dict(head.pending_writes) == {
        "task-0": ["y", {"log": ["w0"]}, None],
        "task-1": ["y", {"log": ["w1"]}, None],
    }
    assert dict(head.resume_values) == {"i1": ("yes",)}
    assert head.interrupts == ()
    # nothing else of it changed: values, parent, step, next, metadata
    assert dict(head.values) == {"log": ["a", "b"]}
    assert (head.parent_id, head.step, head.next_nodes) == (first.id, 1, ("y", "z"))
    assert dict(head.metadata) == {"source": "loop"}
    # one checkpoint per step: the history is what it was, with the record in it
    history = list(any_saver.list("t"))
    assert [c.id for c in history] == [second.id, first.id]
    assert "task-1" in history[0].pending_writes
    assert any_saver.get("t", second.id).pending_writes == head.pending_writes


def test_writes_refuse_a_checkpoint_that_is_not_the_head(any_saver: BaseCheckpointSaver) -> None:
    first, second = _two_steps(any_saver)
    with pytest.raises(CheckpointConflictError, match="moved"):
        any_saver.put_writes(_with_writes(first, 1))
    assert dict(any_saver.get("t", first.id).pending_writes) == {}  # nothing written
    # a fork from an older checkpoint writes there without the check
    any_saver.put_writes(_with_writes(first, 1), check_head=False)
    assert "task-0" in any_saver.get("t", first.id).pending_writes
    assert any_saver.get("t").id == second.id  # the head did not move


def test_writes_of_a_checkpoint_the_thread_does_not_hold(any_saver: BaseCheckpointSaver) -> None:
    _, second = _two_steps(any_saver)
    stranger = make("t", second.id, 2, {}, next_nodes=("y",))
    with pytest.raises(CheckpointNotFoundError, match="no checkpoint") as caught:
        any_saver.put_writes(stranger, check_head=False)
    assert caught.value.checkpoint_id == stranger.id
    with pytest.raises(CheckpointNotFoundError):
        any_saver.put_writes(dataclasses.replace(stranger, thread_id="nobody"), check_head=False)


def test_a_write_that_cannot_be_stored_fails_and_writes_nothing(
    any_saver: BaseCheckpointSaver,
) -> None:
    _, second = _two_steps(any_saver)
    bad = dataclasses.replace(second, pending_writes={"task-0": ["y", {"log": [threading.Lock()]}]})
    with pytest.raises(UnserializableValueError):
        any_saver.put_writes(bad)
    assert dict(any_saver.get("t").pending_writes) == {}


def test_async_twin(any_saver: BaseCheckpointSaver) -> None:
    _, second = _two_steps(any_saver)

    async def body() -> Checkpoint | None:
        await any_saver.aput_writes(_with_writes(second, 3))
        got = await any_saver.aget("t")
        if hasattr(any_saver, "aclose"):
            await any_saver.aclose()  # the async client closes on the loop it ran on
        return got

    got = asyncio.run(body())
    assert got is not None and len(got.pending_writes) == 3


def test_a_reader_holding_the_head_sees_writes_made_by_another_saver(tmp_path: Any) -> None:
    """Two processes on one file: the reader's held head must not hide the other's writes
    (a process that resumes a thread another one was killed in)."""
    path = tmp_path / "shared.sqlite"
    with SqliteSaver(path) as writer, SqliteSaver(path) as reader:
        _, second = _two_steps(writer)
        assert reader.get("t") is not None  # held decoded by the reader now
        writer.put_writes(_with_writes(second, 2))
        seen = reader.get("t")
        assert seen is not None and len(seen.pending_writes) == 2
        assert len(reader.get("t", second.id).pending_writes) == 2


def test_a_redis_reader_holding_the_head_sees_writes_made_by_another_saver(
    redis_url: str,
) -> None:
    from checkpoint import RedisSaver

    with (
        RedisSaver.from_url(redis_url, key_prefix="pw") as writer,
        RedisSaver.from_url(redis_url, key_prefix="pw") as reader,
    ):
        writer.delete_thread("t")
        _, second = _two_steps(writer)
        assert reader.get("t") is not None
        writer.put_writes(_with_writes(second, 2))
        seen = reader.get("t")
        assert seen is not None and len(seen.pending_writes) == 2


def test_which_savers_store_writes() -> None:
    class Plain(MemorySaver):
        durable = True

    class NoWrites(BaseCheckpointSaver):
        def put(self, *args: Any, **kwargs: Any) -> None: ...
        def get(self, *args: Any, **kwargs: Any) -> None: ...
        def list(self, *args: Any, **kwargs: Any) -> Any:
            return iter(())

        def delete_thread(self, thread_id: str) -> None: ...

    assert not stores_writes(None)
    assert not stores_writes(MemorySaver())  # not durable: a killed process loses it anyway
    assert stores_writes(Plain())
    assert not stores_writes(NoWrites())  # a custom saver without put_writes
    with pytest.raises(NotImplementedError, match="NoWrites does not store pending writes"):
        NoWrites().put_writes(make("t", None, 0, {}))
