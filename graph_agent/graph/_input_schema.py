"""A graph's input schema (``StateGraph(input_schema=...)``): a pydantic model, a dataclass or
a TypedDict that says what new input a run takes. Clients read it as JSON Schema (a served
assistant's ``input_schema``: the web page builds its form from it); each run's new input is
checked against it, and used as given."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import GraphUsageError, GraphValidationError

__all__ = ["InputSchema"]


class InputSchema:
    """``kind`` (a pydantic model, a dataclass or a TypedDict), checked once: its JSON Schema
    and a validator of input dicts."""

    __slots__ = ("_adapter", "json_schema", "kind")

    def __init__(self, kind: Any) -> None:
        from pydantic import PydanticUserError, TypeAdapter

        if not isinstance(kind, type):
            raise GraphValidationError(
                [
                    f"input_schema must be a class (a pydantic model, a dataclass or a "
                    f"TypedDict), got {kind!r}"
                ]
            )
        try:
            self._adapter: Any = TypeAdapter(kind)
            schema = self._adapter.json_schema()
        except (PydanticUserError, TypeError) as error:
            raise GraphValidationError(
                [
                    f"input_schema {kind.__name__} cannot be described as JSON Schema: "
                    f"{error}. Its types are found by name in their module: define them at "
                    "the top of a module Python imported (one loaded by hand goes in "
                    "sys.modules first)"
                ]
            ) from None
        if schema.get("type") != "object":
            raise GraphValidationError(
                [
                    f"input_schema {kind.__name__} must describe an object of state keys (a "
                    f"pydantic model, a dataclass or a TypedDict), not {schema.get('type')!r}"
                ]
            )
        self.kind = kind
        self.json_schema: dict[str, Any] = schema

    def check(self, inputs: Mapping[str, Any], graph: str) -> None:
        """``GraphUsageError`` naming each field of ``inputs`` that does not fit."""
        from pydantic import ValidationError

        try:
            self._adapter.validate_python(dict(inputs))
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or '(input)'}: {e['msg']}" for e in error.errors()
            )
            raise GraphUsageError(
                f"{graph}: the input does not fit its input_schema {self.kind.__name__} "
                f"({problems}); send the fields it names"
            ) from None
