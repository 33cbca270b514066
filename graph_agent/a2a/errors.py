"""The error a remote A2A agent's failure raises."""

from __future__ import annotations

from ..errors import GraphAgentError

__all__ = ["RemoteA2AError"]


class RemoteA2AError(GraphAgentError):
    """A remote A2A agent could not answer: it is down or unreachable, its agent card is
    missing or invalid, it refused our credentials, it timed out, or its task failed,
    was rejected or was canceled. The message says what, where (the agent and its URL; the
    task id when there is one) and how to fix it; ``url`` is the agent's URL, ``state`` the
    remote task's last state (``"failed"``, ...) when the task itself ended badly."""

    def __init__(self, message: str, *, url: str, state: str | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.state = state
