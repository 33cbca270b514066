"""What the runs service raises: a run refused on a busy thread, an event id a run never
sent, the signal that a run stopped for its worker to stop; and an error as a run's log
keeps it."""

from __future__ import annotations

from ..errors import GraphAgentError

__all__ = ["RecordedError", "RunDrained", "ThreadBusyError", "UnknownEventIdError"]


class ThreadBusyError(GraphAgentError):
    """A run was asked for on a thread that runs one, with ``multitask_strategy="reject"``."""


class UnknownEventIdError(GraphAgentError, ValueError):
    """A ``Last-Event-ID`` this run never sent."""


class RecordedError(Exception):
    """An error a run's log kept, read back (in another process, or after a restart):
    ``type(error).__name__`` is the class name of the error the run raised (a subclass of
    this one of that name), its message the one a client may be shown."""


class RunDrained(Exception):
    """A run stopped at a step boundary because its worker is stopping (``Run.draining``):
    its thread holds every step it finished, and the run goes back to the queue."""
