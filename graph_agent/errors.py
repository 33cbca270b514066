"""Errors raised by ``graph_agent``; every one derives from :class:`GraphAgentError`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class GraphAgentError(Exception):
    """Base class of every error raised by ``graph_agent``."""


class GraphValidationError(GraphAgentError, ValueError):
    """The graph is malformed. ``problems`` lists every problem found, not just the first."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:
            message = f"invalid graph: {self.problems[0]}"
        else:
            lines = "\n".join(f"  - {p}" for p in self.problems)
            message = f"invalid graph ({len(self.problems)} problems):\n{lines}"
        super().__init__(message)


class InvalidUpdateError(GraphAgentError, ValueError):
    """A node (or an input, or ``update_state``) returned an update the state cannot take.

    ``node`` names who wrote it and ``key`` the state key, when there is one.
    """

    def __init__(self, message: str, *, node: str, key: str | None = None) -> None:
        super().__init__(message)
        self.node = node
        self.key = key


class InvalidRouteError(GraphAgentError, ValueError):
    """A router returned a label that its conditional edge does not know."""

    def __init__(self, message: str, *, node: str, label: object) -> None:
        super().__init__(message)
        self.node = node
        self.label = label


class GraphRecursionError(GraphAgentError, RecursionError):
    """A run took more super-steps than its recursion limit without reaching END."""


class GraphResumeError(GraphAgentError, ValueError):
    """A thread cannot be resumed (or started) the way it was asked to."""


class GraphUsageError(GraphAgentError, TypeError):
    """The API was called in a way that cannot work (e.g. async nodes run with ``invoke``)."""


class ModelError(GraphAgentError):
    """A chat model call failed. ``status`` and ``body`` come from the HTTP response when there
    was one; the API key never appears in the message."""

    def __init__(self, message: str, *, status: int | None = None, body: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class ToolExecutionException(GraphAgentError):
    """A tool could not produce a result: its arguments were invalid, or it raised.

    ``tool_name`` names the tool; ``__cause__`` holds the original exception, if any.
    """

    def __init__(self, message: str, *, tool_name: str) -> None:
        super().__init__(message)
        self.tool_name = tool_name


class ToolArgumentsError(ToolExecutionException):
    """The model's arguments for a tool are not a JSON object or fail validation; the message
    lists what is wrong so the model can correct its call."""


class ToolResolutionError(GraphAgentError, ValueError):
    """The tools of a request cannot be assembled: a name nobody can resolve, or two
    different tools with one name."""


class UnknownToolError(GraphAgentError, LookupError):
    """The model asked for a tool that is not available (``unknown_tool_strategy="throw"``)."""

    def __init__(self, message: str, *, tool_name: str, available: list[str]) -> None:
        super().__init__(message)
        self.tool_name = tool_name
        self.available = available

    def __str__(self) -> str:
        return str(self.args[0])


class ToolCallLoopError(GraphAgentError, RuntimeError):
    """A framework-controlled tool loop went on for more rounds than its cap."""


class AgentBuildError(GraphAgentError, ValueError):
    """An agent's configuration cannot work. ``problems`` lists every problem found."""

    def __init__(self, agent: str | None, problems: list[str]) -> None:
        self.problems = problems
        who = f"agent '{agent}'" if agent else "the agent"
        if len(problems) == 1:
            message = f"cannot build {who}: {problems[0]}"
        else:
            listing = "\n".join(f"  - {p}" for p in problems)
            message = f"cannot build {who} ({len(problems)} problems):\n{listing}"
        super().__init__(message)


class AgentMaxIterationsError(GraphRecursionError):
    """An agent run made ``max_iterations`` model calls without reaching a final answer."""


class AgentRoutingError(GraphAgentError, ValueError):
    """An ``LlmRoutingAgent``'s model named no valid sub-agent, after being told the valid
    names (``attempts`` times), and the router has no ``fallback_agent``. ``answer`` is the
    model's last reply."""

    def __init__(self, message: str, *, agent: str, answer: str) -> None:
        super().__init__(message)
        self.agent = agent
        self.answer = answer


class OutputValidationError(GraphAgentError, ValueError):
    """An agent with an ``output_type`` got no valid structured answer: the model's answers
    failed validation (or its ``output_validators``) on every attempt its ``output_retries``
    allowed, or the model refused (``refusal``: its reason, else ``None``).

    ``raw_output`` is the last answer as the model gave it (its text, or the arguments of its
    final-answer tool call); ``errors`` the last validation errors (pydantic's, each a dict
    with ``type``, ``loc`` and ``msg``; a validator's message as ``{"type": "output_retry",
    "msg": ...}``); ``agent`` names the agent.
    """

    def __init__(
        self,
        message: str,
        *,
        agent: str,
        raw_output: str,
        errors: Sequence[Mapping[str, Any]] = (),
        refusal: str | None = None,
    ) -> None:
        super().__init__(message)
        self.agent = agent
        self.raw_output = raw_output
        self.errors = [dict(error) for error in errors]
        self.refusal = refusal


class OutputRetry(GraphAgentError):
    """Raised by an agent's ``output_validator`` to send ``message`` back to the model as a
    validation error: the model tries again (an attempt of the agent's ``output_retries``).
    Any other exception a validator raises propagates out of the run."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class McpServerError(GraphAgentError, ConnectionError):
    """An MCP server could not be started or reached, did not answer in time, crashed, or
    belongs to a closed provider (``graph_agent.mcp``). ``server`` names it."""

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server


class RunStopped(BaseException):
    """A run stopped because its event stream was closed early (``break``, ``close()``,
    cancelling the task that iterates it): it stops at the next step boundary, its thread
    resumable. Listeners get it as the ``error`` of the run's ``RunError`` event; it is a
    ``BaseException``, like ``GeneratorExit``, so ``except Exception`` does not swallow it."""
