"""An answer to a thread's approval pause, checked when the run is asked for: one that does
not fit is the client's 422 (saying the shapes expected), before any run starts."""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any

from hooks.builtin.errors import ToolFeedbackError
from hooks.builtin.human import feedback_for_request, is_approval_request

from ..graph import CompiledGraph, Interrupt, RunnableConfig
from ._http import HTTPProblem

__all__ = ["check_resume"]


async def check_resume(graph: CompiledGraph, thread_id: str, resume: Any) -> None:
    """``HTTPProblem(422)`` if ``resume`` answers a ``HumanInTheLoopHook`` pause of
    ``thread_id`` (as it stands: call it only while no run is busy on the thread) in a shape
    that does not fit it. Answers to other pauses, and answers the graph itself would refuse
    as misaddressed, are left to the run."""
    snapshot = await graph.aget_state(RunnableConfig(thread_id=thread_id))
    if snapshot is None:
        return
    for pause, answer in _addressed(snapshot.interrupts, resume):
        if not is_approval_request(pause.value):
            continue
        try:
            feedback_for_request(pause.value, answer)
        except ToolFeedbackError as error:
            raise HTTPProblem(
                422, f"command.resume does not answer the approval {pause.id!r}: {error}"
            ) from None


def _addressed(pending: Sequence[Interrupt], resume: Any) -> list[tuple[Interrupt, Any]]:
    """Which pause gets which answer, as the graph assigns them: by interrupt id when
    ``resume`` is a dict with a key shaped like one (none if any is not pending: the run
    refuses that, naming those that are), else the only one pending."""
    ids = {pause.id: pause for pause in pending}
    if isinstance(resume, Mapping) and any(_id_shaped(key) for key in resume):
        if not all(key in ids for key in resume):
            return []
        return [(ids[key], value) for key, value in resume.items()]
    return [(pending[0], resume)] if len(pending) == 1 else []


def _id_shaped(key: object) -> bool:
    """Whether ``key`` is shaped like an interrupt id (a UUID: 8-4-4-4-12 hex digits)."""
    if not isinstance(key, str):
        return False
    parts = key.split("-")
    return [len(p) for p in parts] == [8, 4, 4, 4, 12] and all(
        c in string.hexdigits for p in parts for c in p
    )
