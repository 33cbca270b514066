"""Which failures of a run are its client's mistakes (logged in one line at WARNING), not a
fault of the server or of the code it serves (logged at ERROR with the traceback)."""

from __future__ import annotations

from checkpoint.errors import CheckpointNotFoundError
from hooks.builtin.errors import ToolFeedbackError

from ..errors import GraphResumeError, InvalidUpdateError

__all__ = ["client_mistake"]


def client_mistake(error: BaseException) -> bool:
    """Whether a run failed on what its client sent, not on a fault of the server or of the
    code it serves: an answer to a pause that does not fit it (``ToolFeedbackError``), a
    thread that cannot go on the way it was asked to (``GraphResumeError``), a checkpoint
    the thread does not have, an input the state cannot take."""
    if isinstance(error, InvalidUpdateError):
        return error.node == "__input__"
    return isinstance(error, (ToolFeedbackError, GraphResumeError, CheckpointNotFoundError))
