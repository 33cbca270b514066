"""What an ``output_type`` is made of: its variants (the members of a union), their names, and
the classes a stored answer holds (registered for checkpointing when the agent is built)."""

from __future__ import annotations

import dataclasses
import enum
import re
import types
import typing
from typing import Any

from pydantic import BaseModel
from typing_extensions import is_typeddict

__all__ = ["register_classes", "snake_case", "supported", "type_name", "variants_of"]


def variants_of(output_type: Any) -> tuple[Any, ...]:
    """The members of a union (``A | B``, ``Union[A, B]``), else the type alone."""
    origin = typing.get_origin(output_type)
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        return typing.get_args(output_type)
    return (output_type,)


def supported(variant: Any) -> bool:
    """A pydantic model, a dataclass or a TypedDict."""
    return isinstance(variant, type) and (
        issubclass(variant, BaseModel) or dataclasses.is_dataclass(variant) or is_typeddict(variant)
    )


def type_name(variant: Any) -> str:
    """The name of a type (or of anything, for messages)."""
    return str(getattr(variant, "__name__", repr(variant)))


def snake_case(name: str) -> str:
    """``InvoiceLine`` -> ``invoice_line``: the tail of a final-answer tool's name."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return re.sub(r"[^a-z0-9_]+", "_", spaced.lower()).strip("_") or "answer"


def _classes(hint: Any, found: dict[type, None]) -> None:
    """The pydantic models, dataclasses and enums ``hint`` is made of (for the checkpoint
    registry: a stored answer holds them), in order, each once."""
    if isinstance(hint, type) and hint not in found:
        if issubclass(hint, BaseModel):
            found[hint] = None
            for field in hint.model_fields.values():
                _classes(field.annotation, found)
            return
        if dataclasses.is_dataclass(hint) or is_typeddict(hint):
            if not is_typeddict(hint):
                found[hint] = None
            try:
                hints = typing.get_type_hints(hint)
            except Exception:  # an unresolvable forward reference: pydantic reports it
                return
            for inner in hints.values():
                _classes(inner, found)
            return
        if issubclass(hint, enum.Enum):
            found[hint] = None
            return
    for inner in typing.get_args(hint):
        _classes(inner, found)


def register_classes(output_type: Any, registry: Any, problems: list[str]) -> None:
    """Make the answer's classes storable by the agent's saver (``structured_response`` is
    checkpointed): each one not registered yet is registered under ``module.QualName``."""
    from checkpoint import default_registry, register_type

    target = registry if registry is not None else default_registry
    found: dict[type, None] = {}
    _classes(output_type, found)
    for cls in found:
        if target.is_registered(cls):  # under the user's own name, maybe: kept
            continue
        try:
            register_type(cls, registry=target)
        except (TypeError, ValueError) as error:
            problems.append(
                f"output_type: {type_name(cls)} cannot be registered for checkpointing ({error}); "
                "register it yourself with checkpoint.register_type(cls, name=...)"
            )
