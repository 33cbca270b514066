"""The checkpoint record and the interface every saver implements."""

from __future__ import annotations

import abc
import asyncio
import dataclasses
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

__all__ = ["BaseCheckpointSaver", "Checkpoint", "CheckpointDelta"]


@dataclasses.dataclass(frozen=True, slots=True)
class Checkpoint:
    """A thread's state after one step, and where the thread goes next.

    ``values`` is the whole state; ``next_nodes`` the nodes that run when the thread
    resumes (empty when its run finished). ``interrupts``, ``resume_values`` and
    ``pending_writes`` are the engine's record of a paused step: why it paused, the resume
    values it was given, and the updates of the nodes that finished before the pause (so
    they do not run again). Savers store them as they are. Ids are unique and carry the
    writer's clock (``created_at``); savers never order checkpoints by them.
    """

    id: str
    thread_id: str
    parent_id: str | None
    step: int
    next_nodes: tuple[str, ...]
    values: Mapping[str, Any]
    created_at: datetime
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    interrupts: tuple[Mapping[str, Any], ...] = ()
    resume_values: Mapping[str, Sequence[Any]] = dataclasses.field(default_factory=dict)
    pending_writes: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class CheckpointDelta:
    """What a checkpoint changed relative to its parent.

    ``appended`` holds only the new items of APPEND keys; ``replaced`` the full new value of
    every other key that changed (an APPEND key that was rewritten, not extended, is here
    too). A key appears in at most one of them. Applying the deltas of a checkpoint's
    ancestors, oldest first, onto an empty state gives the checkpoint's values.
    """

    appended: Mapping[str, Sequence[Any]] = dataclasses.field(default_factory=dict)
    replaced: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def full(cls, values: Mapping[str, Any]) -> CheckpointDelta:
        """A delta that sets every key, for savers handed no delta."""
        return cls(replaced=dict(values))


class BaseCheckpointSaver(abc.ABC):
    """Keeps checkpoints per thread. Sync methods are abstract; async twins default to
    running them in a worker thread, so a saver that does blocking I/O never blocks the loop.

    ``put`` is the only write. With ``check_head=True`` it succeeds only while the thread's
    latest checkpoint (its head) is still ``checkpoint.parent_id`` (``None``: the thread
    must not exist yet); otherwise it raises ``CheckpointConflictError`` and writes nothing.
    ``check_head=False`` moves the head unconditionally (a fork from an old checkpoint).

    Order without clocks: "latest" is the head the last ``put`` moved, ``list`` yields the
    checkpoints in the reverse of the order they were written to the thread, and retention
    drops the oldest writes and never the head; none of it looks at the time in an id. What
    a caller does to the values it passed to ``put`` or got back must not change what is
    stored, and a value the serializer cannot store fails at ``put`` with
    ``UnserializableValueError``.

    ``durable`` says whether what it stores outlives the process. The engine stores the
    work a step finished while the rest of the step still runs only on a durable saver
    (see docs/graph.md, "Finished work is never done twice"); a saver kept in memory loses
    it with the process anyway.
    """

    durable: ClassVar[bool] = True

    @abc.abstractmethod
    def put(
        self,
        checkpoint: Checkpoint,
        delta: CheckpointDelta | None = None,
        *,
        check_head: bool = True,
    ) -> None:
        """Store ``checkpoint`` as the thread's new head; ``delta`` is what changed since its
        parent (``None``: store ``checkpoint.values`` in full)."""

    @abc.abstractmethod
    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The thread's latest checkpoint, or the one with ``checkpoint_id``; ``None`` if absent."""

    @abc.abstractmethod
    def list(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> Iterator[Checkpoint]:
        """The thread's checkpoints, newest write first; ``before`` starts after that
        checkpoint (nothing if the thread does not hold it)."""

    @abc.abstractmethod
    def delete_thread(self, thread_id: str) -> None:
        """Forget every checkpoint of the thread (no error if it has none)."""

    async def aput(
        self,
        checkpoint: Checkpoint,
        delta: CheckpointDelta | None = None,
        *,
        check_head: bool = True,
    ) -> None:
        await asyncio.to_thread(self.put, checkpoint, delta, check_head=check_head)

    async def aget(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        return await asyncio.to_thread(self.get, thread_id, checkpoint_id)

    async def alist(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> AsyncIterator[Checkpoint]:
        items = await asyncio.to_thread(
            lambda: list(self.list(thread_id, limit=limit, before=before))
        )
        for item in items:
            yield item

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)
