"""OpenAI's strict mode for a JSON schema: made strict when that loses nothing, else the reasons.

Strict structured output (``"strict": true``) accepts a subset of JSON Schema: every object
declares ``additionalProperties: false`` and lists every property in ``required``; only some
keywords are known. ``strict_schema`` rewrites a pydantic schema into that form where the
rewrite keeps its meaning:

- an object without ``additionalProperties`` gets ``false`` (the validator ignores unknown
  fields anyway);
- an optional property that may be ``null`` and defaults to ``None`` becomes required (the
  model sends ``null``, which validates to the same default);
- a ``$ref`` with sibling keywords (a field's description) is inlined;
- a discriminated union (``oneOf`` with a ``discriminator``) becomes ``anyOf`` (its variants
  exclude each other by the discriminator's value, so ``anyOf`` accepts the same values).

Anything else (an optional property with another default, a free-form dict, extra fields
allowed, an unsupported keyword or ``format``, a recursive ``$ref`` with siblings) cannot be
made strict without changing what the model may answer: the schema is then sent as it is,
with ``strict: false``, and each reason is reported.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

__all__ = ["strict_schema"]

# The keywords OpenAI's strict mode accepts (its "supported schemas" list).
_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "title",
        "description",
        "pattern",
        "format",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "minItems",
        "maxItems",
    }
)
_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
_NO_DEFAULT = object()


def strict_schema(schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``schema`` rewritten for strict mode, and the reasons it cannot be strict (empty when
    it can: then the rewritten schema means what ``schema`` meant). ``schema`` is unchanged."""
    root = copy.deepcopy(dict(schema))
    walker = _Walker(root)
    title = root.get("title")
    fixed = walker.fix(root, title if isinstance(title, str) else "the schema")
    if fixed.get("type") != "object":
        walker.problems.append("the schema's root is not an object")
    return fixed, walker.problems


def _nullable(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_nullable(v) for v in schema.get("anyOf", ()) if isinstance(v, Mapping))


class _Walker:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.problems: list[str] = []
        self.inlining: list[str] = []

    def _resolve(self, ref: str) -> Any:
        node: Any = self.root
        if not ref.startswith("#/"):
            return None
        for part in ref[2:].split("/"):
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node

    def fix(self, node: Any, where: str) -> Any:
        if not isinstance(node, Mapping):
            return node
        node = dict(node)
        ref = node.get("$ref")
        if isinstance(ref, str) and len(node) > 1:
            return self._inline(node, ref, where)
        if "oneOf" in node and "discriminator" in node and "anyOf" not in node:
            node["anyOf"] = node.pop("oneOf")
            node.pop("discriminator")
        for key in node:
            if key not in _KEYWORDS and key != "default":  # defaults: see _object
                self.problems.append(f"{where}: the keyword '{key}' is not supported")
        kind = node.get("format")
        if kind is not None and kind not in _FORMATS:
            self.problems.append(f"{where}: the format '{kind}' is not supported")
        defs = node.get("$defs")
        if isinstance(defs, Mapping):
            node["$defs"] = {name: self.fix(sub, name) for name, sub in defs.items()}
        if node.get("type") == "object" or "properties" in node:
            self._object(node, where)
        if "items" in node:
            node["items"] = self.fix(node["items"], f"{where}[]")
        if isinstance(node.get("anyOf"), list):
            node["anyOf"] = [self.fix(sub, where) for sub in node["anyOf"]]
        if "default" in node and node["default"] is None:
            node.pop("default")  # an optional nullable field made required: null is its default
        return node

    def _inline(self, node: dict[str, Any], ref: str, where: str) -> Any:
        """``{"$ref": ..., "description": ...}``: the target with the siblings, since strict
        mode refuses a ``$ref`` beside other keywords."""
        target = self._resolve(ref)
        if not isinstance(target, Mapping):
            self.problems.append(f"{where}: the $ref '{ref}' does not resolve")
            return node
        if ref in self.inlining:
            self.problems.append(f"{where}: the recursive $ref '{ref}' has sibling keywords")
            return node
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        self.inlining.append(ref)
        try:
            return self.fix({**copy.deepcopy(dict(target)), **siblings}, where)
        finally:
            self.inlining.pop()

    def _object(self, node: dict[str, Any], where: str) -> None:
        properties = node.get("properties")
        extra = node.get("additionalProperties", False)
        if extra is not False:
            self.problems.append(f"{where}: it allows properties it does not declare")
        if not isinstance(properties, Mapping) or not properties:
            if extra is False and properties is None:
                self.problems.append(f"{where}: an object whose properties are not declared")
            properties = properties if isinstance(properties, Mapping) else {}
        required = node.get("required") or []
        for name, sub in properties.items():
            if name in required:
                continue
            default = sub.get("default", _NO_DEFAULT) if isinstance(sub, Mapping) else None
            if default is None and _nullable(sub):
                continue  # required and nullable means the same
            known = "" if default is _NO_DEFAULT else f" (default {default!r})"
            self.problems.append(
                f"{where}.{name} is optional{known}: strict mode makes the model always send it"
            )
        node["additionalProperties"] = False
        node["required"] = list(properties)
        node["properties"] = {
            name: self.fix(sub, f"{where}.{name}") for name, sub in properties.items()
        }
