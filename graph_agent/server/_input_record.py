"""What a run's record keeps of its input: the input as the served graph cleans it
(``compile(clean_input=...)``: a ``PIIHook``'s agent removes personal data so), never the data
the cleaner removes; nothing at all of an input the cleaner refuses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..graph import CompiledGraph
from ._http import HTTPProblem
from ._wire_messages import to_jsonable

__all__ = ["recorded_input"]


def recorded_input(graph: CompiledGraph, value: Any, sent: Any, thread_id: str) -> Any:
    """The ``input`` a run's record keeps (its ``kwargs``, which the runs' routes return and
    a restart or a worker runs again): ``sent`` (the request's JSON) when ``graph`` cleans
    nothing out of ``value`` (the input as parsed), else the cleaned input in the protocol's
    form. A 422 when the cleaner refuses the input (a ``PIIHook`` that blocks): the request
    is refused before any thread or run is made, so nothing of it is stored."""
    if not isinstance(value, Mapping):
        return sent  # a resume, a command: no new input to clean
    try:
        cleaned = graph.clean_input(value)
    except Exception as error:
        raise HTTPProblem(422, f"input refused by the graph: {error}") from None
    return sent if cleaned is value else to_jsonable(dict(cleaned), thread_id=thread_id)
