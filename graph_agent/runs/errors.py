"""What the runs service raises: a run refused on a busy thread, an event id a run never
sent, and the signal that a run stopped for its worker to stop."""

from __future__ import annotations

from ..errors import GraphAgentError

__all__ = ["RunDrained", "ThreadBusyError", "UnknownEventIdError"]


class ThreadBusyError(GraphAgentError):
    """A run was asked for on a thread that runs one, with ``multitask_strategy="reject"``."""


class UnknownEventIdError(GraphAgentError, ValueError):
    """A ``Last-Event-ID`` this run never sent."""


class RunDrained(Exception):
    """A run stopped at a step boundary because its worker is stopping (``Run.draining``):
    its thread holds every step it finished, and the run goes back to the queue."""
