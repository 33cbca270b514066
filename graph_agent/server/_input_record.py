"""What a run's record keeps of its request: the new input as the served graph cleans it
(``compile(clean_input=...)``: a ``PIIHook``'s agent removes personal data so), never the data
the cleaner removes; nothing at all of an input the cleaner refuses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..graph import Command, CompiledGraph
from ._http import HTTPProblem
from ._wire_messages import to_jsonable

__all__ = ["recorded_kwargs"]


def recorded_kwargs(
    graph: CompiledGraph, value: Any, body: Mapping[str, Any], thread_id: str
) -> dict[str, Any]:
    """The ``kwargs`` a run's record keeps (the runs' routes return them, a restart or a
    worker runs them again): what the client asked (``body`` but its ``assistant_id``), with
    its new input (``input``, or a resume's ``command.update``; ``value`` is the request's
    parsed) as ``graph`` cleans it, in the protocol's form; as sent when the cleaner changes
    nothing. A 422 when the cleaner refuses the input (a ``PIIHook`` that blocks): the
    request is refused before any thread or run is made, so nothing of it is stored."""
    kwargs = {k: v for k, v in body.items() if k != "assistant_id"}
    given = value.update if isinstance(value, Command) else value
    if not isinstance(given, Mapping):
        return kwargs  # no new input (a resume, or a command without an update)
    try:
        cleaned = graph.clean_input(given)
    except Exception as error:
        raise HTTPProblem(422, f"input refused by the graph: {error}") from None
    if cleaned is given:
        return kwargs
    wire = to_jsonable(dict(cleaned), thread_id=thread_id)
    if isinstance(value, Command):
        kwargs["command"] = {**kwargs["command"], "update": wire}
    else:
        kwargs["input"] = wire
    return kwargs
