"""A task of A2A's or MCP's, read from the runs: the run a call started and the runs of its
thread that answered its interrupts after it (a ``command.resume`` each), oldest first. Any
server reading the same runs finds the same task; nothing is stored beside them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..runs import Run

__all__ = ["chain_from", "chains", "is_answer"]


def is_answer(run: Run) -> bool:
    """Whether ``run`` answers an interrupt (a resume): it goes on with the task before it."""
    command = run.kwargs.get("command")
    return isinstance(command, Mapping) and "resume" in command


def chains(thread_runs: Sequence[Run]) -> list[list[Run]]:
    """A thread's runs (in any order) grouped in tasks, each oldest first."""
    tasks: list[list[Run]] = []
    for run in sorted(thread_runs, key=lambda r: r.created_at):
        if tasks and is_answer(run):
            tasks[-1].append(run)
        else:
            tasks.append([run])
    return tasks


def chain_from(thread_runs: Sequence[Run], run: Run) -> list[Run]:
    """``run`` and the runs of its thread (``thread_runs``, in any order) that answered it
    after it, one after the other, oldest first."""
    later = sorted(
        (r for r in thread_runs if r.created_at > run.created_at and r.run_id != run.run_id),
        key=lambda r: r.created_at,
    )
    chain = [run]
    for answer in later:
        if not is_answer(answer):
            break
        chain.append(answer)
    return chain
