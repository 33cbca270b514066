"""The checkpoint record and the interface every saver implements."""

from __future__ import annotations

import abc
import asyncio
import dataclasses
import math
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

from .slots import slot_setters

__all__ = [
    "BaseCheckpointSaver",
    "Checkpoint",
    "CheckpointDelta",
    "lease_seconds",
    "stores_writes",
    "supports_leases",
]


# A frozen dataclass's own __init__ sets each field with ``object.__setattr__``, which costs
# twice what setting the slot through its descriptor does; a checkpoint and its delta are made
# for every step and every read, so their __init__ is written out (same parameters, same
# defaults: ``<factory>`` makes a new dict) and sets the slots that way (``slot_setters``).
class _Factory:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_NEW_DICT: Any = _Factory()


@dataclasses.dataclass(frozen=True, slots=True, init=False)
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

    def __init__(
        self,
        id: str,
        thread_id: str,
        parent_id: str | None,
        step: int,
        next_nodes: tuple[str, ...],
        values: Mapping[str, Any],
        created_at: datetime,
        metadata: Mapping[str, Any] = _NEW_DICT,
        interrupts: tuple[Mapping[str, Any], ...] = (),
        resume_values: Mapping[str, Sequence[Any]] = _NEW_DICT,
        pending_writes: Mapping[str, Any] = _NEW_DICT,
    ) -> None:
        s_id, s_thread, s_parent, s_step, s_next, s_values, s_at, s_meta, s_int, s_res, s_pend = (
            _CHECKPOINT_SETTERS
        )
        s_id(self, id)
        s_thread(self, thread_id)
        s_parent(self, parent_id)
        s_step(self, step)
        s_next(self, next_nodes)
        s_values(self, values)
        s_at(self, created_at)
        s_meta(self, {} if metadata is _NEW_DICT else metadata)
        s_int(self, interrupts)
        s_res(self, {} if resume_values is _NEW_DICT else resume_values)
        s_pend(self, {} if pending_writes is _NEW_DICT else pending_writes)


_CHECKPOINT_SETTERS = slot_setters(Checkpoint)


@dataclasses.dataclass(frozen=True, slots=True, init=False)
class CheckpointDelta:
    """What a checkpoint changed relative to its parent.

    ``appended`` holds only the new items of APPEND keys; ``replaced`` the full new value of
    every other key that changed (an APPEND key that was rewritten, not extended, is here
    too). A key appears in at most one of them. Applying the deltas of a checkpoint's
    ancestors, oldest first, onto an empty state gives the checkpoint's values.
    """

    appended: Mapping[str, Sequence[Any]] = dataclasses.field(default_factory=dict)
    replaced: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __init__(
        self,
        appended: Mapping[str, Sequence[Any]] = _NEW_DICT,
        replaced: Mapping[str, Any] = _NEW_DICT,
    ) -> None:
        _SET_APPENDED(self, {} if appended is _NEW_DICT else appended)
        _SET_REPLACED(self, {} if replaced is _NEW_DICT else replaced)

    @classmethod
    def full(cls, values: Mapping[str, Any]) -> CheckpointDelta:
        """A delta that sets every key, for savers handed no delta."""
        return cls(replaced=dict(values))


_SET_APPENDED, _SET_REPLACED = slot_setters(CheckpointDelta)


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
    that implements ``put_writes`` (see docs/graph.md, "Finished work is never done
    twice"); a saver kept in memory loses it with the process anyway.

    Leases and fencing (optional, as ``put_writes`` is; see ``supports_leases``): a worker
    that runs a thread holds the thread's *lease*, a token with an expiry
    (``acquire_lease``, kept alive by ``renew_lease``, dropped by ``release_lease``;
    ``lease_holder`` names the live one). ``put`` and ``put_writes`` take ``fence=token``:
    the write then succeeds only while the thread's live lease is ``token``, checked
    atomically with the write (the same transaction, the same script); otherwise nothing is
    written and ``LeaseLostError`` is raised, which means the run must stop (another worker
    owns the thread). A write without a fence is not checked against leases at all. A lease
    is not a checkpoint: ``delete_thread`` leaves it.
    """

    durable: ClassVar[bool] = True

    @abc.abstractmethod
    def put(
        self,
        checkpoint: Checkpoint,
        delta: CheckpointDelta | None = None,
        *,
        check_head: bool = True,
        fence: str | None = None,
    ) -> None:
        """Store ``checkpoint`` as the thread's new head; ``delta`` is what changed since its
        parent (``None``: store ``checkpoint.values`` in full). With ``fence`` (a lease
        token), only while the thread's live lease is that token (``LeaseLostError``
        otherwise, nothing written)."""

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

    def put_writes(
        self, checkpoint: Checkpoint, *, check_head: bool = True, fence: str | None = None
    ) -> None:
        """Store the pending writes of a step that started from ``checkpoint``, while the
        step still runs: ``checkpoint`` is one the thread holds, given again with the
        engine's record of the running step (``pending_writes``: what its tasks finished so
        far; ``resume_values``: the answers and kept results it was given; ``interrupts``:
        the pauses it has not answered). That record replaces the stored one; nothing else
        of the checkpoint changes (its values are not written) and no checkpoint is added,
        so a history holds one checkpoint per step however its steps ran. Reads of the
        checkpoint return it with the new record.

        With ``check_head=True`` it succeeds only while ``checkpoint`` is the thread's head
        (``CheckpointConflictError`` otherwise, with nothing written); a checkpoint the
        thread does not hold raises ``CheckpointNotFoundError``. A value the serializer
        cannot store raises ``UnserializableValueError``. With ``fence`` (a lease token), only
        while the thread's live lease is that token (``LeaseLostError`` otherwise).

        Optional: a saver without it stores no work of a step before the step ends (a
        process killed mid-step runs the whole step again). See ``stores_writes``.
        """
        raise NotImplementedError(f"{type(self).__name__} does not store pending writes")

    # -- leases (optional: see supports_leases) ---------------------------------------------

    def acquire_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
        """Make ``token`` the thread's lease for ``ttl_seconds`` if the thread has no live
        lease or it is already ``token``'s (then it is extended); ``True`` if it is now
        ``token``'s, ``False`` if another token holds it (nothing changes)."""
        raise NotImplementedError(f"{type(self).__name__} does not keep leases")

    def renew_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
        """Extend ``token``'s lease to ``ttl_seconds`` from now; ``False`` (nothing changes)
        if the thread's live lease is not ``token``'s any more (it expired, or another
        acquired it)."""
        raise NotImplementedError(f"{type(self).__name__} does not keep leases")

    def release_lease(self, thread_id: str, token: str) -> None:
        """Drop the thread's lease if it is ``token``'s (another's is left alone)."""
        raise NotImplementedError(f"{type(self).__name__} does not keep leases")

    def lease_holder(self, thread_id: str) -> str | None:
        """The token of the thread's live lease; ``None`` when it has none (or it expired)."""
        raise NotImplementedError(f"{type(self).__name__} does not keep leases")

    async def aacquire_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
        return await asyncio.to_thread(self.acquire_lease, thread_id, token, ttl_seconds)

    async def arenew_lease(self, thread_id: str, token: str, ttl_seconds: float) -> bool:
        return await asyncio.to_thread(self.renew_lease, thread_id, token, ttl_seconds)

    async def arelease_lease(self, thread_id: str, token: str) -> None:
        await asyncio.to_thread(self.release_lease, thread_id, token)

    async def alease_holder(self, thread_id: str) -> str | None:
        return await asyncio.to_thread(self.lease_holder, thread_id)

    # -- async twins ---------------------------------------------------------------------------

    async def aput(
        self,
        checkpoint: Checkpoint,
        delta: CheckpointDelta | None = None,
        *,
        check_head: bool = True,
        fence: str | None = None,
    ) -> None:
        if fence is None:  # a saver written before fencing takes no fence argument
            await asyncio.to_thread(self.put, checkpoint, delta, check_head=check_head)
        else:
            await asyncio.to_thread(self.put, checkpoint, delta, check_head=check_head, fence=fence)

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

    async def aput_writes(
        self, checkpoint: Checkpoint, *, check_head: bool = True, fence: str | None = None
    ) -> None:
        if fence is None:
            await asyncio.to_thread(self.put_writes, checkpoint, check_head=check_head)
        else:
            await asyncio.to_thread(self.put_writes, checkpoint, check_head=check_head, fence=fence)


def stores_writes(saver: BaseCheckpointSaver | None) -> bool:
    """Whether runs on ``saver`` store a step's finished work while the step still runs:
    a durable saver that implements ``put_writes``."""
    return (
        saver is not None
        and saver.durable
        and type(saver).put_writes is not BaseCheckpointSaver.put_writes
    )


def lease_seconds(where: str, ttl_seconds: object) -> float:
    """``ttl_seconds`` as a float, a lease's length; ``ValueError`` naming ``where`` (the
    call and argument, e.g. ``"acquire_lease(ttl_seconds=...)"``) unless it is a positive,
    finite number of seconds."""
    if (
        isinstance(ttl_seconds, bool)
        or not isinstance(ttl_seconds, (int, float))
        or not math.isfinite(ttl_seconds)
        or ttl_seconds <= 0
    ):
        raise ValueError(f"{where} must be a positive number of seconds, got {ttl_seconds!r}")
    return float(ttl_seconds)


def supports_leases(saver: BaseCheckpointSaver | None) -> bool:
    """Whether ``saver`` keeps leases per thread (implements ``acquire_lease`` and the rest),
    so writes can be fenced by a lease token."""
    return saver is not None and type(saver).acquire_lease is not BaseCheckpointSaver.acquire_lease
