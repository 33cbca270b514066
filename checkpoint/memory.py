"""An in-process saver: the embedded default, for tests and one-process apps.

It follows ``checkpoint/_savers/retention.py``'s rules (write order, head, retention), here
in Python: its retention is ``_savers.retention.dropped``, and a record whose parent is not
held is a full base.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from ._savers.delta import apply_deltas
from ._savers.frozen import hand_out, how_to_hand_out
from ._savers.head import HeadValues, Kinds, private_delta
from ._savers.index import encode_put, engine_record_list, header_of
from ._savers.leases import (
    ACQUIRE,
    RELEASE,
    RENEW,
    Op,
    allowed,
    check_args,
    check_fence,
    check_thread,
)
from ._savers.retention import dropped
from .base import BaseCheckpointSaver, Checkpoint, CheckpointDelta
from .errors import (
    CheckpointConflictError,
    CheckpointNotFoundError,
    LeaseLostError,
    SerializationError,
)
from .serde import Serializer

__all__ = ["MemorySaver"]


class _Record:
    """One stored checkpoint: its header and its delta, serialized as a durable saver stores
    them. Bytes, not objects: a thread's history costs the garbage collector nothing, and
    what is read back is decoded afresh, so no caller can reach what is stored. (The head's
    values are kept decoded beside it, in ``HeadValues``.)"""

    __slots__ = (
        "body",
        "created_at",
        "header",
        "id",
        "is_base",
        "next_nodes",
        "parent_id",
        "step",
    )

    def __init__(self, checkpoint: Checkpoint, header: bytes, body: bytes) -> None:
        self.id = checkpoint.id
        self.parent_id = checkpoint.parent_id
        self.step = checkpoint.step
        self.next_nodes = checkpoint.next_nodes
        self.created_at: datetime = checkpoint.created_at
        self.header = header  # [metadata, interrupts, resume values, pending writes]
        self.body = body  # [replaced values, appended items]
        # A base record's delta holds the full values: rebuilding stops here.
        self.is_base = checkpoint.parent_id is None


class _Thread:
    __slots__ = ("children", "head", "head_values", "records")

    def __init__(self) -> None:
        self.records: dict[str, _Record] = {}  # insertion order is the order of the writes
        # tuples of ids, not lists: the garbage collector stops tracking a tuple of strings
        self.children: dict[str, tuple[str, ...]] = {}
        self.head: str | None = None
        self.head_values = HeadValues()  # the head's values (private: never handed out)


class MemorySaver(BaseCheckpointSaver):
    """Checkpoints kept in this process's memory: for tests and one-process apps (use
    ``SqliteSaver`` or ``RedisSaver`` for anything that must survive the process).

    Stored incrementally: each checkpoint holds only its delta (as the bytes ``put``
    encodes), and the latest state is kept whole, so a step costs the same however long the
    thread. It behaves like a durable saver:
    a value the serializer cannot store fails at ``put`` with ``UnserializableValueError``,
    and nothing a caller does to what it passed to ``put`` or got from ``get``/``list``
    changes what is stored (unchangeable values are shared, the rest is copied).

    ``max_threads`` keeps only the most recently used threads (a read or a write is a use);
    ``max_retained`` keeps only the newest writes of each thread (``_savers.retention``'s rules: a
    kept child of a dropped checkpoint is rebuilt as a full base). ``copy=True`` hands out a
    full msgpack round trip of every value on every read, frozen ones included, as a durable
    saver's read would.

    Leases (``BaseCheckpointSaver``) are kept beside the threads and expire by this
    process's monotonic clock; ``max_threads`` never drops one.
    """

    durable = False  # lost with the process: steps store no progress here

    def __init__(
        self,
        max_threads: int | None = None,
        max_retained: int | None = None,
        *,
        copy: bool = False,
        serializer: Serializer | None = None,
    ) -> None:
        for name, limit in (("max_threads", max_threads), ("max_retained", max_retained)):
            if limit is not None and (type(limit) is not int or limit < 1):
                raise ValueError(
                    f"MemorySaver({name}=...) must be a positive int or None, got {limit!r}"
                )
        self.max_threads = max_threads
        self.max_retained = max_retained
        self.copy = copy
        self.serializer = serializer or Serializer()
        self._threads: OrderedDict[str, _Thread] = OrderedDict()
        self._leases: dict[str, tuple[str, float]] = {}  # thread -> (token, monotonic deadline)
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
        fence: str | None = None,
    ) -> None:
        if fence is not None:
            check_fence("put", fence)
        if delta is None:
            delta = CheckpointDelta.full(checkpoint.values)
        header, body = self._encode(checkpoint, delta)  # an unstorable value fails here
        private, kinds = private_delta(delta, self.serializer)
        record = _Record(checkpoint, header, body)
        with self._lock:
            if fence is not None:
                self._check_fence(checkpoint.thread_id, fence)
            thread = self._threads.get(checkpoint.thread_id)
            head = thread.head if thread is not None else None
            if check_head and head != checkpoint.parent_id:
                raise CheckpointConflictError.moved(
                    checkpoint.thread_id, checkpoint.parent_id, head
                )
            if record.parent_id is not None and (
                thread is None or record.parent_id not in thread.records
            ):  # the parent was pruned (or forgotten): keep the full values here
                full = CheckpointDelta.full(checkpoint.values)
                _, record.body = self._encode(checkpoint, full)
                private, kinds = private_delta(full, self.serializer)
                record.is_base = True
            if thread is None:
                thread = self._threads[checkpoint.thread_id] = _Thread()
                if self.max_threads is not None and len(self._threads) > self.max_threads:
                    self._threads.popitem(last=False)
            else:
                self._threads.move_to_end(checkpoint.thread_id)
            thread.records.pop(record.id, None)  # written again: it is the newest write now
            thread.records[record.id] = record
            parent_id = record.parent_id
            if parent_id is not None and not record.is_base:  # a base needs no parent kept
                siblings = thread.children.get(parent_id, ())
                thread.children[parent_id] = (*siblings, record.id)
            self._advance_head(thread, head, record, private, kinds)
            thread.head = record.id
            if self.max_retained is not None:
                self._prune(thread, self.max_retained)

    def _encode(self, checkpoint: Checkpoint, delta: CheckpointDelta) -> tuple[bytes, bytes]:
        """The header's bytes and the delta's, as ``put`` stores them. A value that cannot be
        stored raises the ``UnserializableValueError`` every saver raises (same message, key
        and path)."""
        s = self.serializer
        try:
            header = s.dumps(engine_record_list(checkpoint))
            body = self._body(delta)
        except SerializationError:
            encode_put(s, checkpoint, delta)  # raises the durable savers' error
            raise
        return header, body

    def _advance_head(
        self,
        thread: _Thread,
        old_head: str | None,
        record: _Record,
        private: CheckpointDelta,
        kinds: Kinds,
    ) -> None:
        """Make the thread's kept head values those of ``record``: advanced in place by its
        ``private`` delta when it extends the old head, so a write costs its delta; made from
        its delta alone when it is a base (its delta holds every value); rebuilt otherwise."""
        if record.is_base:
            thread.head_values = HeadValues()
            thread.head_values.advance(private, kinds)
        elif record.parent_id != old_head or old_head is None:
            # the ancestors decoded, then the private delta: what cannot change is shared
            older = self._chain(thread, record)[1:]
            deltas = [*(self._delta(r) for r in reversed(older)), private]
            thread.head_values = HeadValues(apply_deltas(deltas))
        else:
            thread.head_values.advance(private, kinds)

    def _prune(self, thread: _Thread, keep: int) -> None:
        """Retention (``_savers.retention``'s rule 4): drop all but the newest ``keep``
        writes, oldest first; the head, the last write, always stays. A child of a dropped
        checkpoint that stays becomes a full base, rebuilt while its parent is still there."""
        for oldest_id in dropped(thread.records, keep):
            for child_id in thread.children.pop(oldest_id, ()):
                child = thread.records.get(child_id)
                if child is not None and not child.is_base:
                    full = CheckpointDelta.full(self._materialize(thread, child))
                    child.body = self._body(full)
                    child.is_base = True
            del thread.records[oldest_id]

    def put_writes(
        self, checkpoint: Checkpoint, *, check_head: bool = True, fence: str | None = None
    ) -> None:
        """The running step's record replaces ``checkpoint``'s (``BaseCheckpointSaver``).
        Implemented for a faithful saver, although the engine stores no work of a running
        step here (``durable`` is false)."""
        if fence is not None:
            check_fence("put_writes", fence)
        s = self.serializer
        s.dumps(header_of(checkpoint), key="<checkpoint header>")  # what cannot be stored fails
        header = s.dumps(engine_record_list(checkpoint))  # as every saver's, then this one's
        thread_id = checkpoint.thread_id
        with self._lock:
            if fence is not None:
                self._check_fence(thread_id, fence)
            thread = self._threads.get(thread_id)
            head = thread.head if thread is not None else None
            if check_head and head != checkpoint.id:
                raise CheckpointConflictError.moved(thread_id, checkpoint.id, head)
            record = thread.records.get(checkpoint.id) if thread is not None else None
            if record is None:
                raise CheckpointNotFoundError.for_writes(thread_id, checkpoint.id)
            record.header = header

    def delete_thread(self, thread_id: str) -> None:
        with self._lock:
            self._threads.pop(thread_id, None)

    # -- leases: by this process's monotonic clock -------------------------------------------

    def _holder(self, thread_id: str) -> str | None:
        """The thread's live lease (the lock held); an expired one is dropped."""
        lease = self._leases.get(thread_id)
        if lease is None:
            return None
        if lease[1] <= time.monotonic():
            del self._leases[thread_id]
            return None
        return lease[0]

    def _check_fence(self, thread_id: str, fence: str) -> None:
        holder = self._holder(thread_id)
        if holder != fence:
            raise LeaseLostError.refused(thread_id, fence, holder)

    def _lease(self, op: Op, thread_id: str, token: str, ttl_seconds: float) -> bool:
        with self._lock:
            if not allowed(op, self._holder(thread_id), token):
                return False
            if op == RELEASE:
                del self._leases[thread_id]
            else:
                self._leases[thread_id] = (token, time.monotonic() + ttl_seconds)
            return True

    def acquire_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
        ttl = check_args("acquire_lease", thread_id, token, ttl_seconds)
        return self._lease(ACQUIRE, thread_id, token, ttl)

    def renew_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
        ttl = check_args("renew_lease", thread_id, token, ttl_seconds)
        return self._lease(RENEW, thread_id, token, ttl)

    def release_lease(self, thread_id: str, token: str) -> None:
        check_args("release_lease", thread_id, token)
        self._lease(RELEASE, thread_id, token, 0.0)

    def lease_holder(self, thread_id: str) -> str | None:
        check_thread("lease_holder", thread_id)
        with self._lock:
            return self._holder(thread_id)

    # -- reading ---------------------------------------------------------------------------

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        return self._get(thread_id, checkpoint_id, None)

    def _get(
        self,
        thread_id: str,
        checkpoint_id: str | None,
        decoded: dict[bytes, CheckpointDelta] | None,
    ) -> Checkpoint | None:
        s = self.serializer
        with self._lock:
            thread = self._threads.get(thread_id)
            if thread is None:
                return None
            self._threads.move_to_end(thread_id)
            record_id = checkpoint_id if checkpoint_id is not None else thread.head
            record = thread.records.get(record_id) if record_id is not None else None
            if record is None:
                return None
            if record.id == thread.head:
                head = thread.head_values
                values = (
                    s.loads_mapping(s.dumps_mapping(head.values)) if self.copy else head.hand_out(s)
                )
            elif decoded is None:  # decoded afresh: the caller's own objects
                values = self._materialize(thread, record)
            else:  # decoded objects shared within a listing: what could change is copied
                values = {
                    k: hand_out(v, how_to_hand_out(v), s)
                    for k, v in self._materialize(thread, record, decoded).items()
                }
            return self._checkpoint(thread_id, record, values)

    def list(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> Iterator[Checkpoint]:
        """Newest first: the reverse of the order the checkpoints were written in (never the
        order of their ids). ``before`` starts after that checkpoint; one this thread does not
        hold (pruned, or never written) gives nothing. Each stored delta is decoded once."""
        with self._lock:
            thread = self._threads.get(thread_id)
            ids = list(reversed(thread.records)) if thread is not None else []
        if before is not None:
            ids = ids[ids.index(before) + 1 :] if before in ids else []
        if limit is not None:
            ids = ids[:limit]
        decoded: dict[bytes, CheckpointDelta] = {}
        for record_id in ids:
            checkpoint = self._get(thread_id, record_id, decoded)
            if checkpoint is not None:  # pruned meanwhile
                yield checkpoint

    def _chain(self, thread: _Thread, record: _Record) -> builtins.list[_Record]:
        """``record`` and its ancestors back to the nearest full base, newest first."""
        chain = [record]
        while not chain[-1].is_base:
            chain.append(thread.records[chain[-1].parent_id])  # type: ignore[index]
        return chain

    def _materialize(
        self, thread: _Thread, record: _Record, decoded: dict[bytes, CheckpointDelta] | None = None
    ) -> dict[str, Any]:
        """``record``'s values, decoded afresh; ``decoded``: the deltas a listing decoded
        already (by stored bytes), so each is decoded once however many checkpoints use it."""
        chain = reversed(self._chain(thread, record))
        if decoded is None:
            return apply_deltas(self._delta(r) for r in chain)
        return apply_deltas(
            decoded[r.body] if r.body in decoded else decoded.setdefault(r.body, self._delta(r))
            for r in chain
        )

    def _body(self, delta: CheckpointDelta) -> bytes:
        """A delta as a record stores it: ``[replaced values, appended items]`` in msgpack."""
        appended = {k: list(v) for k, v in delta.appended.items()}
        return self.serializer.dumps([dict(delta.replaced), appended])

    def _delta(self, record: _Record) -> CheckpointDelta:
        """A record's delta, decoded afresh."""
        replaced, appended = self.serializer.loads(record.body)
        return CheckpointDelta(appended=appended, replaced=replaced)

    def _checkpoint(self, thread_id: str, record: _Record, values: Mapping[str, Any]) -> Checkpoint:
        metadata, interrupts, resume, pending = self.serializer.loads(record.header)
        return Checkpoint(
            id=record.id,
            thread_id=thread_id,
            parent_id=record.parent_id,
            step=record.step,
            next_nodes=record.next_nodes,
            values=values,
            created_at=record.created_at,
            metadata=metadata,
            interrupts=tuple(interrupts),
            resume_values={k: tuple(v) for k, v in resume.items()},
            pending_writes=pending,
        )

    # -- accounting --------------------------------------------------------------------------

    def stored_bytes(self, thread_id: str) -> int:
        """Serialized bytes of the thread's checkpoints (what a durable saver would store)."""
        with self._lock:
            thread = self._threads.get(thread_id)
            if thread is None:
                return 0
            return sum(len(r.header) + len(r.body) for r in thread.records.values())

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
        fence: str | None = None,
    ) -> None:
        self.put(checkpoint, delta, check_head=check_head, fence=fence)

    async def aget(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        return self.get(thread_id, checkpoint_id)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def aput_writes(
        self, checkpoint: Checkpoint, *, check_head: bool = True, fence: str | None = None
    ) -> None:
        self.put_writes(checkpoint, check_head=check_head, fence=fence)

    async def aacquire_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
        return self.acquire_lease(thread_id, token, ttl_seconds)

    async def arenew_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
        return self.renew_lease(thread_id, token, ttl_seconds)

    async def arelease_lease(self, thread_id: str, token: str) -> None:
        self.release_lease(thread_id, token)

    async def alease_holder(self, thread_id: str) -> str | None:
        return self.lease_holder(thread_id)
