"""An in-process saver: the embedded default."""

from __future__ import annotations

import builtins
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ._delta import apply_deltas
from .base import BaseCheckpointSaver, Checkpoint, CheckpointDelta
from .errors import CheckpointConflictError
from .serde import Serializer

__all__ = ["MemorySaver"]


class _Record:
    """One stored checkpoint: its header fields and its delta (objects, or msgpack bytes)."""

    __slots__ = (
        "blob",
        "created_at",
        "delta",
        "id",
        "interrupts",
        "is_base",
        "metadata",
        "next_nodes",
        "parent_id",
        "pending_writes",
        "resume_values",
        "size",
        "step",
    )

    def __init__(self, checkpoint: Checkpoint) -> None:
        self.id = checkpoint.id
        self.parent_id = checkpoint.parent_id
        self.step = checkpoint.step
        self.next_nodes = checkpoint.next_nodes
        self.created_at = checkpoint.created_at
        self.metadata: Mapping[str, Any] = checkpoint.metadata
        self.interrupts: tuple[Mapping[str, Any], ...] = checkpoint.interrupts
        self.resume_values: Mapping[str, Sequence[Any]] = checkpoint.resume_values
        self.pending_writes: Mapping[str, Any] = checkpoint.pending_writes
        self.delta: CheckpointDelta | None = None
        self.blob: bytes | None = None
        self.size: int | None = None  # serialized bytes, computed once when asked
        # A base record's delta holds the full values: rebuilding stops here.
        self.is_base = checkpoint.parent_id is None


class _Thread:
    __slots__ = ("children", "head", "head_values", "records")

    def __init__(self) -> None:
        self.records: dict[str, _Record] = {}  # insertion order is creation order
        self.children: dict[str, list[str]] = {}
        self.head: str | None = None
        self.head_values: Mapping[str, Any] | None = None


class MemorySaver(BaseCheckpointSaver):
    """Checkpoints kept in this process's memory, incrementally: each checkpoint holds only
    its delta, and the latest state is cached, so a step costs the same however long the
    thread, and a thread of N messages holds N messages, not every prefix of them.

    ``max_threads`` keeps only the most recently used threads; ``max_retained`` keeps only
    the newest checkpoints of each thread (the oldest kept one is rebuilt as a full base).
    ``copy=True`` stores msgpack bytes instead of the objects themselves: values are
    isolated from later mutation and checked to be serializable, as a durable saver would.
    """

    def __init__(
        self,
        max_threads: int | None = None,
        max_retained: int | None = None,
        *,
        copy: bool = False,
        serializer: Serializer | None = None,
    ) -> None:
        for name, limit in (("max_threads", max_threads), ("max_retained", max_retained)):
            if limit is not None and (not isinstance(limit, int) or limit < 1):
                raise ValueError(
                    f"MemorySaver({name}=...) must be a positive int or None, got {limit!r}"
                )
        self.max_threads = max_threads
        self.max_retained = max_retained
        self.copy = copy
        self.serializer = serializer or Serializer()
        self._threads: OrderedDict[str, _Thread] = OrderedDict()
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return (
            f"MemorySaver(max_threads={self.max_threads}, max_retained={self.max_retained}, "
            f"copy={self.copy}, threads={len(self._threads)})"
        )

    # -- writing ---------------------------------------------------------------------------

    def put(
        self,
        checkpoint: Checkpoint,
        delta: CheckpointDelta | None = None,
        *,
        check_head: bool = True,
    ) -> None:
        if delta is None:
            delta = CheckpointDelta.full(checkpoint.values)
        record = _Record(checkpoint)
        if self.copy:
            record.blob = self._encode(record, delta)  # fails before anything is stored
        else:
            record.delta = delta
        with self._lock:
            thread = self._threads.get(checkpoint.thread_id)
            head = thread.head if thread is not None else None
            if check_head and head != checkpoint.parent_id:
                raise CheckpointConflictError.moved(
                    checkpoint.thread_id, checkpoint.parent_id, head
                )
            if thread is None:
                thread = self._threads[checkpoint.thread_id] = _Thread()
                if self.max_threads is not None and len(self._threads) > self.max_threads:
                    self._threads.popitem(last=False)
            else:
                self._threads.move_to_end(checkpoint.thread_id)
            if record.parent_id is not None and record.parent_id not in thread.records:
                record.is_base = True  # the parent was pruned: keep full values here
                record.delta, record.blob = self._rebase_delta(thread, record, checkpoint.values)
            thread.records[record.id] = record
            if record.parent_id is not None:
                thread.children.setdefault(record.parent_id, []).append(record.id)
            if self.copy:
                thread.head_values = self._private_head(thread, head, record)
            else:
                thread.head_values = checkpoint.values
            thread.head = record.id
            if self.max_retained is not None:
                self._prune(thread, self.max_retained)

    def _private_head(
        self, thread: _Thread, old_head: str | None, record: _Record
    ) -> dict[str, Any]:
        """Copy mode: the new head's values as objects only this saver holds, advanced in
        place from the old head's when the record extends it, so a write costs its delta."""
        old = thread.head_values
        if old is None or record.parent_id != old_head or record.is_base:
            return self._materialize(thread, record)
        values: dict[str, Any] = old  # type: ignore[assignment]  # private: never handed out
        delta = self._delta(record)
        values.update(delta.replaced)
        for key, items in delta.appended.items():
            current = values.get(key)
            if isinstance(current, list):
                current.extend(items)
            else:
                values[key] = [*(current or ()), *items]
        return values

    def _rebase_delta(
        self, thread: _Thread, record: _Record, values: Mapping[str, Any]
    ) -> tuple[CheckpointDelta | None, bytes | None]:
        full = CheckpointDelta.full(values)
        if self.copy:
            return None, self._encode(record, full)
        return full, None

    def _prune(self, thread: _Thread, keep: int) -> None:
        while len(thread.records) > keep:
            oldest_id = next(iter(thread.records))
            if oldest_id == thread.head:
                return
            for child_id in thread.children.pop(oldest_id, ()):
                child = thread.records.get(child_id)
                if child is not None and not child.is_base:
                    values = self._materialize(thread, child)
                    child.delta, child.blob = self._rebase_delta(thread, child, values)
                    child.is_base = True
                    child.size = None
            del thread.records[oldest_id]

    def delete_thread(self, thread_id: str) -> None:
        with self._lock:
            self._threads.pop(thread_id, None)

    # -- reading ---------------------------------------------------------------------------

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        with self._lock:
            thread = self._threads.get(thread_id)
            if thread is None:
                return None
            self._threads.move_to_end(thread_id)
            record_id = checkpoint_id if checkpoint_id is not None else thread.head
            record = thread.records.get(record_id) if record_id is not None else None
            if record is None:
                return None
            if record.id == thread.head and thread.head_values is not None:
                values = thread.head_values
                if self.copy:  # hand out a copy, as a durable saver's read would
                    s = self.serializer
                    values = s.loads_mapping(s.dumps_mapping(values))
            else:
                values = self._materialize(thread, record)
            return self._checkpoint(thread_id, record, values)

    def list(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> Iterator[Checkpoint]:
        with self._lock:
            thread = self._threads.get(thread_id)
            ids = list(reversed(thread.records)) if thread is not None else []
        if before is not None:
            ids = [i for i in ids if i < before]
        if limit is not None:
            ids = ids[:limit]
        for record_id in ids:
            checkpoint = self.get(thread_id, record_id)
            if checkpoint is not None:  # pruned meanwhile
                yield checkpoint

    def _materialize(self, thread: _Thread, record: _Record) -> dict[str, Any]:
        chain = [record]
        while not chain[-1].is_base:
            parent = thread.records[chain[-1].parent_id]  # type: ignore[index]
            chain.append(parent)
        return apply_deltas(self._delta(r) for r in reversed(chain))

    def _checkpoint(self, thread_id: str, record: _Record, values: Mapping[str, Any]) -> Checkpoint:
        metadata, interrupts, resume_values, pending_writes = (
            self._decode_header(record.blob)
            if record.blob is not None
            else (record.metadata, record.interrupts, record.resume_values, record.pending_writes)
        )
        return Checkpoint(
            id=record.id,
            thread_id=thread_id,
            parent_id=record.parent_id,
            step=record.step,
            next_nodes=record.next_nodes,
            values=values,
            created_at=record.created_at,
            metadata=metadata,
            interrupts=interrupts,
            resume_values=resume_values,
            pending_writes=pending_writes,
        )

    # -- encoding (copy mode) and accounting ----------------------------------------------

    def _encode(self, record: _Record, delta: CheckpointDelta) -> bytes:
        s = self.serializer
        return s.dumps(
            [
                s.dumps_mapping(delta.appended),
                s.dumps_mapping(delta.replaced),
                s.dumps(dict(record.metadata), key="<checkpoint metadata>"),
                s.dumps([dict(i) for i in record.interrupts], key="<interrupt values>"),
                s.dumps(
                    {k: list(v) for k, v in record.resume_values.items()}, key="<resume values>"
                ),
                s.dumps_mapping(record.pending_writes),
            ]
        )

    def _delta(self, record: _Record) -> CheckpointDelta:
        if record.delta is not None:
            return record.delta
        assert record.blob is not None
        appended, replaced, *_ = self.serializer.loads(record.blob)
        return CheckpointDelta(
            appended=self.serializer.loads_mapping(appended),
            replaced=self.serializer.loads_mapping(replaced),
        )

    def _decode_header(
        self, blob: bytes
    ) -> tuple[
        dict[str, Any], tuple[dict[str, Any], ...], dict[str, tuple[Any, ...]], dict[str, Any]
    ]:
        s = self.serializer
        _, _, metadata, interrupts, resume_values, pending_writes = s.loads(blob)
        return (
            s.loads(metadata),
            tuple(s.loads(interrupts)),
            {k: tuple(v) for k, v in s.loads(resume_values).items()},
            s.loads_mapping(pending_writes),
        )

    def stored_bytes(self, thread_id: str) -> int:
        """Serialized bytes this saver holds for the thread (what a durable saver would store)."""
        with self._lock:
            thread = self._threads.get(thread_id)
            if thread is None:
                return 0
            total = 0
            for record in thread.records.values():
                if record.size is None:
                    blob = record.blob or self._encode(record, self._delta(record))
                    record.size = len(blob)
                total += record.size
            return total

    def stored_values(self, thread_id: str) -> int:
        """How many state values the thread's checkpoints hold: each appended item and each
        replaced value counts one, a replaced list counts its length."""
        with self._lock:
            thread = self._threads.get(thread_id)
            if thread is None:
                return 0
            total = 0
            for record in thread.records.values():
                delta = self._delta(record)
                total += sum(len(items) for items in delta.appended.values())
                total += sum(
                    len(v) if isinstance(v, (list, tuple)) else 1 for v in delta.replaced.values()
                )
            return total

    def thread_ids(self) -> builtins.list[str]:
        """The threads held, least recently used first."""
        with self._lock:
            return list(self._threads)

    # -- async twins: in-memory work is short, so they run inline --------------------------

    async def aput(
        self,
        checkpoint: Checkpoint,
        delta: CheckpointDelta | None = None,
        *,
        check_head: bool = True,
    ) -> None:
        self.put(checkpoint, delta, check_head=check_head)

    async def aget(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        return self.get(thread_id, checkpoint_id)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)
