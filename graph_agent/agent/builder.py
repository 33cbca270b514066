"""``ReactAgent.builder()``: the agent's options, one method each, made from ``AgentOptions``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ._option_methods import AgentOptionMethods
from ._option_record import add_option_methods
from ._options import AgentOptions

__all__ = ["ReactAgentBuilder"]

Agent = TypeVar("Agent")


class ReactAgentBuilder(AgentOptionMethods, Generic[Agent]):
    """Collects options and ``build()``s a ``ReactAgent``; every method returns the builder.
    Get one with ``ReactAgent.builder()``.

    There is one method per option of ``ReactAgent(...)``, of the same name (docs/agents.md
    lists them), made from ``AgentOptions`` (``AgentOptionMethods`` types them). List options (``tools``, ``hooks``, ...) take any number of values and
    accumulate across calls; ``tool_context`` and ``key_strategies`` merge; the others take
    one value, the last call wins. ``build()`` checks everything at once and raises
    ``AgentBuildError`` listing every problem.
    """

    def __init__(self, make: Callable[..., Agent]) -> None:
        self._make = make  # the agent class: the builder passes it the options as keywords
        self._options: dict[str, Any] = {}

    def output_type(self, output_type: Any, strategy: str = "auto") -> ReactAgentBuilder[Agent]:
        """The type the final answer must validate as: a pydantic model, a dataclass, a
        TypedDict, or a union of them. ``strategy``: ``"tool"`` (a final-answer tool per
        variant), ``"native"`` (the provider's json_schema ``response_format``),
        ``"prompted"`` (format instructions, parsed from the text) or ``"auto"`` (``native``
        when the model declares ``supports_native_output``, else ``tool``). The answer is
        ``state["structured_response"]``; ``agent.call_structured(...)`` returns it."""
        self._options["output_type"] = output_type
        self._options["output_strategy"] = strategy
        return self

    def output_validator(self, validator: Callable[[Any], Any]) -> ReactAgentBuilder[Agent]:
        """A check of your own on the validated answer, sync or async: ``fn(value)`` returns
        the value (changed or not; ``None`` keeps it) or raises ``OutputRetry("why")`` to
        send the error back to the model; any other exception propagates. Accumulates with
        ``output_validators``."""
        self._options.setdefault("output_validators", []).append(validator)
        return self

    def build(self) -> Agent:
        """The agent of the options given so far; ``AgentBuildError`` lists every problem."""
        return self._make(**self._options)


add_option_methods(ReactAgentBuilder, AgentOptions)
