"""Between the model's text and Python values: a tool's JSON arguments in (parsed, with
errors the model can act on) and its result out (``ToolCallResultConverter``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeAlias, runtime_checkable

from pydantic_core import ErrorDetails, PydanticSerializationError, to_jsonable_python

from ..errors import ToolArgumentsError

__all__ = [
    "DefaultToolCallResultConverter",
    "ResultConverterLike",
    "ToolCallResultConverter",
    "as_result_converter",
    "parse_arguments",
    "validation_message",
]

_QUOTE_LIMIT = 200


@runtime_checkable
class ToolCallResultConverter(Protocol):
    """Turns a tool's return value into the text sent back to the model.

    ``return_type`` is the tool function's return annotation (``None`` when it has none).
    Raising ``TypeError`` or ``ValueError`` means the result cannot be converted; the tool
    callback reports that as a ``ToolExecutionException`` naming the tool.
    """

    def convert(self, result: Any, return_type: Any = None) -> str: ...


ResultConverterLike: TypeAlias = "ToolCallResultConverter | Callable[[Any, Any], str]"
"""A converter object, or a plain function ``(result, return_type) -> str``."""


class DefaultToolCallResultConverter:
    """The default conversion.

    A ``str`` is returned as is and ``None`` becomes ``"Success"``. Anything else is encoded
    as JSON (non-ASCII kept readable): pydantic models as ``model_dump(mode="json")``,
    dataclasses as dicts, enums by value, dates and times in ISO 8601, sets and tuples as
    lists, ``Decimal``/``UUID``/``Path`` as strings, ``bytes`` as base64, non-finite floats as
    ``NaN``/``Infinity``. A value JSON cannot encode raises ``TypeError`` naming its type.
    """

    def convert(self, result: Any, return_type: Any = None) -> str:
        if isinstance(result, str):
            return result
        if result is None:
            return "Success"
        try:
            plain = to_jsonable_python(result, bytes_mode="base64")
        except PydanticSerializationError as exc:
            raise TypeError(f"a {_type_name(result)} cannot be encoded as JSON ({exc})") from exc
        return json.dumps(plain, ensure_ascii=False)

    def __repr__(self) -> str:
        return "DefaultToolCallResultConverter()"


class _FunctionConverter:
    """A plain ``(result, return_type) -> str`` function as a ``ToolCallResultConverter``."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[Any, Any], str]) -> None:
        self._fn = fn

    def convert(self, result: Any, return_type: Any = None) -> str:
        return self._fn(result, return_type)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._fn!r})"


DEFAULT_CONVERTER = DefaultToolCallResultConverter()


def as_result_converter(converter: ResultConverterLike | None) -> ToolCallResultConverter:
    """``converter`` as a ``ToolCallResultConverter``: an object with ``convert`` is used as is,
    a callable is wrapped, ``None`` gives the default. Anything else is a ``TypeError``."""
    if converter is None:
        return DEFAULT_CONVERTER
    if isinstance(converter, type):
        raise TypeError(
            f"result_converter must be an instance or a function, got the class "
            f"{converter.__qualname__}; pass {converter.__qualname__}() instead"
        )
    if isinstance(converter, ToolCallResultConverter):
        return converter
    if callable(converter):
        return _FunctionConverter(converter)
    raise TypeError(
        "result_converter must be a ToolCallResultConverter (an object with "
        "convert(result, return_type) -> str) or a function (result, return_type) -> str, "
        f"got {converter!r}"
    )


def _type_name(value: object) -> str:
    kind = type(value)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def parse_arguments(
    tool_name: str, tool_input: str | None, parameter_names: Iterable[str] = ()
) -> dict[str, Any]:
    """The model's raw JSON arguments as a dict; empty, blank or ``null`` is ``{}``.

    Invalid JSON or JSON that is not an object raises ``ToolExecutionException`` quoting the
    (truncated) input and asking for a JSON object with ``parameter_names``.
    """
    if tool_input is None or not tool_input.strip():
        return {}
    try:
        arguments = _loads(tool_input)
    except json.JSONDecodeError as exc:
        raise ToolArgumentsError(
            f"arguments for tool '{tool_name}' are not valid JSON ({exc.msg} at position "
            f"{exc.pos}): {_quote(tool_input)}. Send the arguments as one JSON "
            f"object{_expected(parameter_names)}.",
            tool_name=tool_name,
        ) from exc
    if arguments is None:
        return {}
    if not isinstance(arguments, dict):
        raise ToolArgumentsError(
            f"arguments for tool '{tool_name}' must be a JSON object, got a JSON "
            f"{_json_kind(arguments)}: {_quote(tool_input)}. Send the arguments as one JSON "
            f"object{_expected(parameter_names)}.",
            tool_name=tool_name,
        )
    return arguments


# the scanner json.loads runs, made with the same (default) settings
_scan: Callable[[str, int], tuple[Any, int]] = vars(json.JSONDecoder())["scan_once"]


def _loads(text: str) -> Any:
    """``json.loads(text)``; a JSON object alone (no whitespace around it, as models send
    it) is scanned without ``json.loads``'s layers of calls. Anything else, or anything the
    scan does not take whole, goes to ``json.loads`` (so its errors are ``json.loads``'s)."""
    if type(text) is str and text[:1] == "{" and text[-1:] == "}":
        try:
            value, end = _scan(text, 0)
        except StopIteration:
            return json.loads(text)
        if end == len(text):
            return value
    return json.loads(text)


def _expected(parameter_names: Iterable[str]) -> str:
    names = ", ".join(parameter_names)
    return f" with the tool's parameters ({names})" if names else ", e.g. {}"


def validation_message(tool_name: str, errors: Sequence[ErrorDetails]) -> str:
    """pydantic's validation errors as one ``  - field.path: message (got value)`` line each,
    under a header naming the tool, and a request to fix the call."""
    lines = []
    for item in errors:
        message = item["msg"]
        if item["type"] != "missing" and item["loc"]:
            message += f" (got {_short(json.dumps(item['input'], default=repr))})"
        lines.append(f"  - {_loc(item['loc'])}: {message}")
    noun = "error" if len(lines) == 1 else "errors"
    body = "\n".join(lines)
    return (
        f"invalid arguments for tool '{tool_name}' ({len(lines)} {noun}):\n{body}\n"
        "Fix these arguments and call the tool again."
    )


def _loc(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(arguments)"


def _short(text: str) -> str:
    return text if len(text) <= _QUOTE_LIMIT else text[:_QUOTE_LIMIT] + "..."


def _quote(text: str) -> str:
    return repr(_short(text))


def _json_kind(value: object) -> str:
    kinds = {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return kinds.get(type(value), type(value).__name__)
