"""Private: a tool function's signature as a pydantic input model and a JSON schema, and the
model's JSON arguments turned back into a call of that function."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import types
import warnings
from collections.abc import Callable
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic.errors import PydanticUserError
from pydantic.fields import FieldInfo
from pydantic.json_schema import PydanticJsonSchemaWarning
from pydantic_core import PydanticUndefined

from ..errors import ToolArgumentsError
from .context import ToolContext
from .convert import parse_arguments, validation_message

__all__ = ["ToolInput", "ToolParam", "check_tool_name", "describe", "is_tool_context"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MODEL_CONFIG = ConfigDict(arbitrary_types_allowed=False, protected_namespaces=())
_RESERVED = frozenset(dir(BaseModel))
_DATA_KEYWORDS = frozenset({"default", "examples", "enum", "const"})
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})


@dataclasses.dataclass(frozen=True, slots=True)
class ToolParam:
    """Documents a tool parameter: ``Annotated[str, ToolParam(description="a city")]``.

    ``description`` is shown to the model in the schema. ``required`` overrides the rule that a
    parameter with a default or an ``Optional`` type is optional: ``True`` makes the model send
    it anyway; ``False`` lets the model leave it out, and then the function's default (or
    ``None`` when it has none) is passed.
    """

    description: str | None = None
    required: bool | None = None


def check_tool_name(name: str, *, where: str) -> str:
    """``name`` if it is a name every OpenAI-compatible API accepts, else a ``ValueError``."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"invalid tool name {name!r} for {where}: use 1-64 letters, digits, '_' or '-' "
            "(pass name=... to choose another one)"
        )
    return name


def describe(fn: Callable[..., Any]) -> str | None:
    """The first paragraph of ``fn``'s docstring on one line, or ``None`` without one."""
    doc = inspect.getdoc(fn) if not isinstance(fn, type) else fn.__doc__
    if not doc or not doc.strip():
        return None
    first = inspect.cleandoc(doc).split("\n\n", 1)[0]
    return " ".join(line.strip() for line in first.splitlines()).strip() or None


def is_tool_context(annotation: Any) -> bool:
    """Whether a parameter annotated so receives the ``ToolContext`` (``ToolContext``,
    ``ToolContext | None``, or either inside ``Annotated``)."""
    annotation = _strip_annotated(annotation)
    if annotation is ToolContext:
        return True
    if _is_union(annotation):
        members = [a for a in get_args(annotation) if a is not type(None)]
        return len(members) == 1 and _strip_annotated(members[0]) is ToolContext
    return False


@dataclasses.dataclass(frozen=True, slots=True)
class _Slot:
    """One parameter of the function: where its value comes from and how it is passed."""

    name: str
    positional: bool
    field: str | None  # None: the ToolContext
    always: bool  # pass even when the model left it out (the function has no usable default)


class ToolInput:
    """The input side of one tool: its JSON schema, and ``parse`` + ``bind`` turning the model's
    JSON arguments into the positional and keyword arguments of the function.

    Both raise ``ToolExecutionException`` with a message the model can act on.
    """

    def __init__(
        self,
        *,
        tool_name: str,
        validate: Callable[[dict[str, Any]], Any],
        slots: tuple[_Slot, ...],
        schema: dict[str, Any],
        whole_input: bool,
    ) -> None:
        self.tool_name = tool_name
        self.schema = schema
        self.schema_json = json.dumps(schema, ensure_ascii=False)
        self._validate = validate
        self._slots = slots
        self._whole_input = whole_input

    @property
    def parameter_names(self) -> list[str]:
        """The top-level properties the model is asked to send."""
        return list(self.schema.get("properties", {}))

    @classmethod
    def from_signature(
        cls, fn: Callable[..., Any], *, tool_name: str, skip_first: bool = False
    ) -> ToolInput:
        """One schema property per parameter of ``fn`` (``self``/``cls`` when ``skip_first``
        and ``ToolContext`` parameters excluded). Raises ``TypeError`` naming the function and
        parameter when a type cannot be validated or shown as JSON schema."""
        where = _qualname(fn)
        params = _parameters(fn, skip_first=skip_first)
        taken = {p.name for p in params}
        slots: list[_Slot] = []
        fields: dict[str, Any] = {}
        for param in params:
            positional = param.kind is inspect.Parameter.POSITIONAL_ONLY
            if is_tool_context(param.annotation):
                slots.append(_Slot(param.name, positional, None, True))
                continue
            field, definition, always = _field(param, taken)
            fields[field] = definition
            slots.append(_Slot(param.name, positional, field, always))
        model = _create_model(where, fields)
        schema = _json_schema(where, lambda: model.model_json_schema(), fields)
        validate: Callable[[dict[str, Any]], Any]
        if model.__pydantic_complete__:  # its validator is final: called without model_validate
            validate = model.__pydantic_validator__.validate_python
        else:

            def validate(arguments: dict[str, Any]) -> Any:
                return model.model_validate(arguments)

        return cls(
            tool_name=tool_name,
            validate=validate,
            slots=tuple(slots),
            schema=schema,
            whole_input=False,
        )

    @classmethod
    def from_input_type(
        cls,
        fn: Callable[..., Any],
        input_type: type[Any],
        *,
        tool_name: str,
        skip_first: bool = False,
    ) -> ToolInput:
        """The schema of ``input_type`` (a pydantic model or a dataclass) is the whole input;
        ``fn`` gets the validated instance as its one parameter besides ``ToolContext``s."""
        where = _qualname(fn)
        slots: list[_Slot] = []
        for param in _parameters(fn, skip_first=skip_first):
            positional = param.kind is inspect.Parameter.POSITIONAL_ONLY
            is_context = is_tool_context(param.annotation)
            slots.append(_Slot(param.name, positional, None if is_context else "", True))
        if sum(slot.field is not None for slot in slots) != 1:
            raise TypeError(
                f"tool function {where} must take exactly one parameter for its input_type "
                f"{input_type.__name__} (besides ToolContext parameters)"
            )
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(input_type)
        except (PydanticUserError, TypeError) as exc:
            raise TypeError(f"input_type {input_type!r} of tool function {where}: {exc}") from exc
        schema = _json_schema(where, adapter.json_schema, {})
        return cls(
            tool_name=tool_name,
            validate=adapter.validate_python,
            slots=tuple(slots),
            schema=schema,
            whole_input=True,
        )

    def parse(self, tool_input: str | None) -> dict[str, Any]:
        """The model's raw arguments as a dict: empty, blank or ``null`` is ``{}``."""
        # the parameters' names are read only when the input is refused
        return parse_arguments(self.tool_name, tool_input, self.schema.get("properties", ()))

    def bind(
        self, arguments: dict[str, Any], context: ToolContext
    ) -> tuple[list[Any], dict[str, Any]]:
        """Validate ``arguments`` and lay them out for the function, injecting ``context``."""
        try:
            validated = self._validate(arguments)
        except ValidationError as exc:
            message = validation_message(self.tool_name, exc.errors(include_url=False))
            raise ToolArgumentsError(message, tool_name=self.tool_name) from exc
        given = set() if self._whole_input else validated.__pydantic_fields_set__
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for slot in self._slots:
            if slot.field is None:
                value: Any = context
            elif self._whole_input:
                value = validated
            elif slot.always or slot.field in given:
                value = getattr(validated, slot.field)
            else:
                continue
            if slot.positional:
                args.append(value)
            else:
                kwargs[slot.name] = value
        return args, kwargs


def return_type_of(fn: Callable[..., Any]) -> Any:
    """``fn``'s return annotation, resolved, or ``None`` when it has none."""
    try:
        annotation = inspect.signature(fn, eval_str=True).return_annotation
    except (NameError, TypeError, ValueError, SyntaxError):
        return None
    return None if annotation is inspect.Signature.empty else annotation


def _parameters(fn: Callable[..., Any], *, skip_first: bool) -> list[inspect.Parameter]:
    where = _qualname(fn)
    try:
        signature = inspect.signature(fn, eval_str=True)
    except NameError as exc:
        raise TypeError(
            f"cannot resolve the type hints of tool function {where}: {exc}; define the "
            "types it uses at module level"
        ) from exc
    params = list(signature.parameters.values())
    if skip_first and params:
        params = params[1:]
    for param in params:
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError(
                f"tool function {where} cannot take *{param.name} or **{param.name}: a model "
                "calls a tool with named arguments, so give every parameter a name and a type"
            )
    return params


def _field(param: inspect.Parameter, taken: set[str]) -> tuple[str, Any, bool]:
    """The model field of ``param``: its name, its ``(annotation, default)`` definition and
    whether the function needs the value even when the model left it out."""
    annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
    metadata: list[Any] = []
    option: ToolParam | None = None
    base = annotation
    if get_origin(annotation) is Annotated:
        base, *extras = get_args(annotation)
        for extra in extras:
            if isinstance(extra, ToolParam):
                option = extra
            else:
                metadata.append(extra)
    if option is not None and option.description is not None:
        metadata.append(Field(description=option.description))
    field = param.name
    if field.startswith("_") or field in _RESERVED:
        field = f"{param.name.strip('_') or 'arg'}_"
        while field in taken or field in _RESERVED:
            field += "_"
        taken.add(field)
        metadata.append(Field(alias=param.name))
    typed: Any = base
    for extra in metadata:
        typed = Annotated[typed, extra]
    required = None if option is None else option.required
    default = param.default
    if isinstance(default, FieldInfo):
        if required is True and not default.is_required():
            default = FieldInfo.merge_field_infos(default, default=PydanticUndefined)
        elif required is False and default.is_required():
            default = FieldInfo.merge_field_infos(default, default=None)
        return field, (typed, default), True
    if default is inspect.Parameter.empty:
        optional = required is False or (required is None and _accepts_none(base))
        return field, (typed, None if optional else ...), True
    if required is True:
        return field, (typed, ...), True
    return field, (typed, default), False


def _create_model(where: str, fields: dict[str, Any]) -> type[BaseModel]:
    def build(definitions: dict[str, Any]) -> type[BaseModel]:
        model: type[BaseModel] = create_model(
            "ToolArguments", __config__=_MODEL_CONFIG, **definitions
        )
        return model

    try:
        return build(fields)
    except (PydanticUserError, TypeError) as exc:
        raise _unsupported(where, fields, build, exc) from exc


def _json_schema(
    where: str, generate: Callable[[], dict[str, Any]], fields: dict[str, Any]
) -> dict[str, Any]:
    try:
        with warnings.catch_warnings():  # a default JSON cannot show is left out, that is all
            warnings.simplefilter("ignore", PydanticJsonSchemaWarning)
            raw = generate()
    except (PydanticUserError, TypeError) as exc:

        def probe(definitions: dict[str, Any]) -> object:
            return _create_model(where, definitions).model_json_schema()

        raise _unsupported(where, fields, probe, exc) from exc
    return _finish(where, raw)


def _unsupported(
    where: str,
    fields: dict[str, Any],
    attempt: Callable[[dict[str, Any]], object],
    error: Exception,
) -> TypeError:
    """A ``TypeError`` naming the first parameter whose type ``attempt`` fails on."""
    for name, definition in fields.items():
        try:
            attempt({name: definition})
        except (PydanticUserError, TypeError):
            alias = _alias(definition) or name
            return TypeError(
                f"tool function {where}: parameter '{alias}' has a type a model cannot send "
                f"({definition[0]!r}); use JSON types (str, int, float, bool, enums, Literal, "
                "lists, dicts, pydantic models, dataclasses) or annotate it ToolContext"
            )
    return TypeError(f"tool function {where}: cannot build its input schema: {error}")


def _finish(where: str, raw: dict[str, Any]) -> dict[str, Any]:
    """A clean top-level object schema: no titles, ``type``/``properties`` first, ``$defs`` last."""
    schema: dict[str, Any] = _strip_titles(raw)
    defs: dict[str, Any] = schema.pop("$defs", {})
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and len(schema) == 1:
        schema = dict(defs.get(ref.removeprefix("#/$defs/"), schema))
    if schema.get("type") != "object":
        raise TypeError(f"tool function {where}: its input must be a JSON object, not {schema!r}")
    finished: dict[str, Any] = {"type": "object"}
    if "description" in schema:
        finished["description"] = schema["description"]
    finished["properties"] = schema.get("properties", {})
    if schema.get("required"):
        finished["required"] = schema["required"]
    for key, value in schema.items():
        finished.setdefault(key, value)
    if defs:
        finished["$defs"] = defs
    return finished


def _strip_titles(node: Any) -> Any:
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _DATA_KEYWORDS:
            cleaned[key] = value
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            cleaned[key] = {name: _strip_titles(sub) for name, sub in value.items()}
        else:
            cleaned[key] = _strip_titles(value)
    return cleaned


def _alias(definition: Any) -> str | None:
    typed = definition[0]
    if get_origin(typed) is Annotated:
        for extra in get_args(typed)[1:]:
            if isinstance(extra, FieldInfo) and extra.alias:
                return extra.alias
    return None


def _strip_annotated(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)


def _accepts_none(annotation: Any) -> bool:
    annotation = _strip_annotated(annotation)
    if annotation is None or annotation is type(None):
        return True
    return _is_union(annotation) and any(
        _strip_annotated(a) in (None, type(None)) for a in get_args(annotation)
    )


def _qualname(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    module = getattr(fn, "__module__", None)
    return f"{module}.{name}" if module else str(name)
