"""``ReactAgent.builder()``: the agent's options, one method each, made from ``AgentOptions``."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ._options import AgentOptions

__all__ = ["ReactAgentBuilder"]

Agent = TypeVar("Agent")


class ReactAgentBuilder(Generic[Agent]):
    """Collects options and ``build()``s a ``ReactAgent``; every method returns the builder.
    Get one with ``ReactAgent.builder()``.

    There is one method per option of ``ReactAgent(...)``, of the same name (docs/agents.md
    lists them). List options (``tools``, ``hooks``, ...) take any number of values and
    accumulate across calls; ``tool_context`` and ``key_strategies`` merge; the others take
    one value, the last call wins. ``build()`` checks everything at once and raises
    ``AgentBuildError`` listing every problem.
    """

    def __init__(self, make: Callable[..., Agent]) -> None:
        self._make = make  # the agent class: the builder passes it the options as keywords
        self._options: dict[str, Any] = {}

    if TYPE_CHECKING:  # the option methods are made from AgentOptions below

        def __getattr__(self, option: str) -> Callable[..., ReactAgentBuilder[Agent]]: ...

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


_FORMS = {
    "set": "",
    "add": " Takes any number; calls accumulate.",
    "merge": " Takes a mapping; calls merge.",
}


def _method(field: dataclasses.Field[Any]) -> Callable[..., Any]:
    """The builder's method for one option, in the form its record field declares. A bool
    option's method turns it on when called without a value."""
    key, form = field.name, field.metadata["form"]
    arg = field.metadata["arg"] or key
    parameter = inspect.Parameter(
        arg,
        inspect.Parameter.VAR_POSITIONAL
        if form == "add"
        else inspect.Parameter.POSITIONAL_OR_KEYWORD,
        default=True if isinstance(field.default, bool) else inspect.Parameter.empty,
    )
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    signature = inspect.Signature([self_parameter, parameter])
    shown = inspect.Signature([parameter])

    def method(self: ReactAgentBuilder[Any], *args: Any, **kwargs: Any) -> ReactAgentBuilder[Any]:
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as error:
            raise TypeError(f"ReactAgentBuilder.{key}{shown}: {error}") from None
        bound.apply_defaults()
        value = bound.arguments[arg]
        if form == "add":
            self._options.setdefault(key, []).extend(value)
        elif form == "merge":
            self._options.setdefault(key, {}).update(value)
        else:
            self._options[key] = value
        return self

    method.__name__ = key
    method.__qualname__ = f"ReactAgentBuilder.{key}"
    method.__doc__ = (
        field.metadata["doc"][:1].upper() + field.metadata["doc"][1:] + "." + _FORMS[form]
    )
    method.__signature__ = signature  # type: ignore[attr-defined]
    return method


for _field in dataclasses.fields(AgentOptions):
    if _field.name not in vars(ReactAgentBuilder):
        setattr(ReactAgentBuilder, _field.name, _method(_field))
del _field
