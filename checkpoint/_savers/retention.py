"""A thread's checkpoints: what ``put`` adds, what retention drops, what reads give back.

The rules every saver follows, written once: ``MemorySaver`` in Python (``dropped`` below is
its retention), ``SqliteSaver`` in SQL, ``RedisSaver`` in Lua (``redis/_lua.py``, ``WRITE``).
They are what a saver's callers observe; how a durable saver stores a checkpoint's values (its
index of stored values and list prefixes) is ``index.py``. ``tests/checkpoint/
test_retention_conformance.py`` runs every saver against a model made from this text.

What a thread holds
    Its checkpoints, in the order they were written to it (the *write order*), and its *head*:
    the checkpoint the last ``put`` wrote, so always the newest write. The order is that of
    the writes, never that of the ids, the steps or the clocks in the ids (``ids``): a fork
    from an older checkpoint is the newest write like any other. Every checkpoint held has
    its full values, those rule 2 gave it, whatever was dropped since. A thread that holds
    nothing does not exist: ``get`` gives ``None``, ``list`` nothing.

``put(checkpoint, delta, check_head=...)``
    1. Head check. With ``check_head=True`` the head must be ``checkpoint.parent_id`` (for
       ``None``: the thread holds nothing); otherwise ``CheckpointConflictError``, and
       nothing changes. ``check_head=False`` skips the check (a fork).
    2. Values (``delta=None`` means ``CheckpointDelta.full(checkpoint.values)``):

       - no parent (``parent_id is None``): the delta applied to an empty state;
       - a parent the thread holds: the parent's values with the delta applied (see
         ``CheckpointDelta``; the engine passes the delta that gives ``checkpoint.values``);
       - a parent the thread does not hold (dropped, never written, or its thread deleted):
         ``checkpoint.values``, whole. The delta is not used: what it changes is gone.

    3. The checkpoint becomes the newest write, and the head.
    4. Retention, with ``max_retained=N``: while the thread holds more than ``N``
       checkpoints, the oldest write is dropped. So the newest ``N`` writes stay, the head
       among them (``N >= 1``). Retention looks at the write order alone, not at parent
       links: a checkpoint stays when its parent is dropped, and an old branch is dropped
       with the other old writes whether or not a newer write descends from it.

    A kept checkpoint whose parent was dropped keeps its full values and its ``parent_id``
    (which names a checkpoint ``get`` no longer finds). A later ``put`` naming a dropped
    parent is rule 2's third case.

Reads
    ``get(thread)`` is the head; ``get(thread, id)`` that checkpoint while the thread holds
    it, ``None`` once dropped. ``list(thread)`` gives every checkpoint held, newest write
    first, each as ``get`` gives it; ``before=id`` starts after that checkpoint, and gives
    nothing when the thread does not hold it (a dropped one: everything older went with it);
    ``limit=k`` stops after ``k`` (``0``: nothing).

``delete_thread(thread)``
    Forgets every checkpoint: the thread holds nothing, as if never written. A new first
    ``put`` names no parent; one that names a forgotten parent is rule 2's third case.

Left open (the savers differ here; the test leaves it out)
    An id is written to a thread once. Writing an id the thread holds again, with
    ``check_head=False``: ``MemorySaver`` and ``RedisSaver`` make it the newest write,
    ``SqliteSaver`` refuses it (``CheckpointError``). Rewriting the head with
    ``check_head=True``: ``MemorySaver`` and ``SqliteSaver`` raise ``CheckpointConflictError``,
    ``RedisSaver`` succeeds without writing (it takes it for its own retried write). A
    negative ``limit``: ``MemorySaver`` slices (all but the oldest ``-k``), ``SqliteSaver``
    gives everything, ``RedisSaver`` nothing.

How each saver keeps the rules
    ``MemorySaver``: records in write order (a dict), each holding its delta, except a
    *base*, which holds full values (a checkpoint with no parent holds its delta on an empty
    state; one whose parent is not held, ``checkpoint.values``). Before retention drops a
    record, each of its children still held becomes a base, so rebuilding a kept record
    never needs a dropped one.
    ``SqliteSaver``: a ``seq`` column numbers a thread's writes (the largest plus one);
    retention deletes the rows after the newest ``N`` by ``seq``, then the values and lists
    no kept index refers to (``index``).
    ``RedisSaver``: a sorted set scores a thread's ids by write order (the head's score plus
    one); retention removes all but the ``N`` highest, then sweeps values and lists as
    SQLite does, in the write's script.
"""

from __future__ import annotations

from collections.abc import Collection
from itertools import islice

__all__ = ["dropped"]


def dropped(written: Collection[str], keep: int | None) -> list[str]:
    """Rule 4: the ids retention drops after a write, oldest first.

    ``written`` holds the thread's ids, oldest write first (so the head last); ``keep`` is
    ``max_retained`` (``None``: keep everything). Every write but the newest ``keep``; never
    the head, as ``keep >= 1``.
    """
    excess = len(written) - keep if keep is not None else 0
    return list(islice(written, excess)) if excess > 0 else []
