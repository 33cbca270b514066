"""Checkpoint and run ids (checkpoint/_savers/ids.py): unique within and across processes."""

from __future__ import annotations

import multiprocessing
import random
import re

import pytest

from checkpoint import new_checkpoint_id, new_run_id


def test_checkpoint_ids_made_in_one_process_increase_and_differ() -> None:
    ids = [new_checkpoint_id() for _ in range(10_000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[0-9a-f]{24}", i) for i in ids)


def test_run_ids_are_32_hex_digits_and_differ() -> None:
    ids = {new_run_id() for _ in range(10_000)}
    assert len(ids) == 10_000 and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)


def test_seeding_the_random_module_does_not_repeat_ids() -> None:
    random.seed(7)
    first = (new_run_id(), new_checkpoint_id()[16:])
    random.seed(7)
    assert (new_run_id(), new_checkpoint_id()[16:]) != first


def _draw(queue: multiprocessing.Queue[str]) -> None:
    queue.put(new_run_id())


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork (POSIX)"
)
def test_forked_children_draw_ids_of_their_own() -> None:
    new_run_id()  # the parent's generator is in use before the fork
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[str] = context.Queue()
    children = [context.Process(target=_draw, args=(queue,)) for _ in range(3)]
    for child in children:
        child.start()
    drawn = {queue.get(timeout=20) for _ in children}
    for child in children:
        child.join(20)
    assert len(drawn) == 3 and new_run_id() not in drawn
