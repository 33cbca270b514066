"""Errors raised by the built-in hooks; each derives from ``GraphAgentError``."""

from __future__ import annotations

from typing import Literal

from graph_agent.errors import GraphAgentError

__all__ = [
    "CallLimitExceededError",
    "ModelCallLimitExceededError",
    "PIIDetectionError",
    "ToolCallLimitExceededError",
    "ToolFeedbackError",
]

LimitScope = Literal["run", "thread"]


class CallLimitExceededError(GraphAgentError, RuntimeError):
    """A call limit hook with ``exit_behavior="error"`` stopped the run.

    ``scope`` says which limit was hit (``"run"`` or ``"thread"``), ``limit`` its value and
    ``count`` the calls already made in that scope.
    """

    def __init__(self, message: str, *, scope: LimitScope, limit: int, count: int) -> None:
        super().__init__(message)
        self.scope: LimitScope = scope
        self.limit = limit
        self.count = count


class ModelCallLimitExceededError(CallLimitExceededError):
    """``ModelCallLimitHook(exit_behavior="error")``: one more model call would exceed a limit.

    Raised before the model is called, so the thread's conversation stays valid.
    """


class ToolCallLimitExceededError(CallLimitExceededError):
    """``ToolCallLimitHook(exit_behavior="error")``: the tool calls the model just asked for
    would exceed a limit. ``tool_name`` is the limited tool (``None``: every tool)."""

    def __init__(
        self,
        message: str,
        *,
        scope: LimitScope,
        limit: int,
        count: int,
        tool_name: str | None,
    ) -> None:
        super().__init__(message, scope=scope, limit=limit, count=count)
        self.tool_name = tool_name


class ToolFeedbackError(GraphAgentError, ValueError):
    """A ``ToolFeedback`` is malformed, or the feedback given on resume does not match the
    pending tool calls (one missing, an unknown id, two for one call). When raised on resume
    the thread stays paused: resume it again with corrected feedback."""


class PIIDetectionError(GraphAgentError, RuntimeError):
    """Personal data was found where the rule's strategy is ``"block"``. The message names the
    kind, the direction and how many were found, never the data itself."""

    def __init__(self, pii_type: str, direction: str, count: int) -> None:
        super().__init__(
            f"PII blocked: {count} {pii_type} value(s) found in the {direction.replace('_', ' ')}; "
            f"remove them, or give the PIIHook for '{pii_type}' another strategy "
            "(redact, mask, hash)"
        )
        self.pii_type = pii_type
        self.direction = direction
        self.count = count
