"""What a client sends, read so that no request can break the server: the JSON body (its
size, its depth, and only values that can be stored and sent back), then its fields, each
read by type (``Fields``), so that a wrong one is a 422 that names it, never a 500.

Every route reads its body and query here. A body is refused whole, before anything is
stored, when it holds what no later answer could write back as JSON: a lone surrogate
(``"\\ud800"``), a number that is not finite (``1e999``, ``NaN``), or nesting deeper than
``MAX_DEPTH``. Limits and offsets are LangGraph's: a limit from 1 to ``MAX_LIMIT``, an
offset from 0.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from starlette.requests import Request

from ._http import HTTPProblem
from ._wire_inbound import short_repr

__all__ = [
    "MAX_DEPTH",
    "MAX_LIMIT",
    "Fields",
    "json_body",
    "query_int",
    "refuse_unsupported",
    "run_config_fields",
]

MAX_DEPTH: Final = 100  # levels of nesting a request body may have
MAX_LIMIT: Final = 1000  # the most items one list answer holds (LangGraph's bound)

# a JSON escape of a UTF-16 surrogate: only a body with one can hold a lone surrogate
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


async def json_body(request: Request, max_body: int) -> dict[str, Any]:
    """The request's JSON object (``{}`` for an empty body): 413 beyond ``max_body`` bytes,
    422 for what is not a JSON object in UTF-8, or holds what cannot be stored (above)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_body:
        raise HTTPProblem(413, f"the request body is over {max_body} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > max_body:
            raise HTTPProblem(413, f"the request body is over {max_body} bytes")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise HTTPProblem(422, f"the request body is not UTF-8: {error}") from None
    if not text.strip():
        return {}
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise HTTPProblem(422, f"the request body is nested too deeply: {_DEEP}") from None
    except ValueError as error:
        raise HTTPProblem(422, f"the request body is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise HTTPProblem(
            422, f"the request body must be a JSON object, got {type(value).__name__}"
        )
    _check_storable(value, strings=_SURROGATE_ESCAPE.search(text) is not None)
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def _check_storable(body: dict[str, Any], *, strings: bool) -> None:
    """Refuse (422, naming where) a value nested over ``MAX_DEPTH`` levels, a number that
    is not finite, and (with ``strings``) a lone surrogate in a string or a key."""
    pending: list[tuple[Any, tuple[str | int, ...]]] = [(body, ())]
    while pending:
        value, path = pending.pop()
        if isinstance(value, str):
            if strings and not value.isascii() and _SURROGATE.search(value):
                raise _unstorable(path, f"holds a lone surrogate, {short_repr(value)}", _TEXT)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise _unstorable(path, f"is {value!r}", "send a finite number")
        elif isinstance(value, (dict, list)):
            if len(path) >= MAX_DEPTH:
                raise _unstorable(path, "is nested too deeply", _DEEP)
            if isinstance(value, list):
                pending.extend((item, (*path, index)) for index, item in enumerate(value))
                continue
            for key, item in value.items():
                if strings and not key.isascii() and _SURROGATE.search(key):
                    raise _unstorable(path, f"has a key with a lone surrogate, {key!r}", _TEXT)
                pending.append((item, (*path, key)))


_TEXT: Final = "no JSON store keeps one: send valid Unicode text"
_DEEP: Final = f"a request body may have at most {MAX_DEPTH} levels of nesting"


def _unstorable(path: tuple[str | int, ...], problem: str, fix: str) -> HTTPProblem:
    return HTTPProblem(422, f"{_dotted(path) or 'the request body'} {problem}: {fix}")


def _dotted(path: Iterable[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


class Fields:
    """The fields of a JSON object a client sent, read by type: a field that is absent or
    ``null`` takes its default; one of the wrong type is a 422 that names it (``config.
    configurable``) and says what it must be."""

    def __init__(self, values: Mapping[str, Any], prefix: str = "") -> None:
        self.values = values
        self.prefix = prefix

    def name(self, field: str) -> str:
        return f"{self.prefix}{field}"

    def bad(self, field: str, must: str) -> HTTPProblem:
        given = self.values.get(field)
        return HTTPProblem(
            422,
            f"{self.name(field)} must be {must}, got {type(given).__name__} {short_repr(given)}",
        )

    def get(self, field: str) -> Any:
        return self.values.get(field)

    def integer(self, field: str, default: int, low: int = 0, high: int | None = None) -> int:
        """An integer from ``low`` to ``high`` (a float with no fraction counts)."""
        value = self.values.get(field)
        if value is None:
            return default
        return _integer(value, low, high, lambda must: self.bad(field, must))

    def obj(self, field: str) -> dict[str, Any]:
        """A JSON object (``{}`` when absent)."""
        value = self.values.get(field)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.bad(field, "a JSON object")
        return value

    def nested(self, field: str) -> Fields:
        """The fields of the JSON object ``field``."""
        return Fields(self.obj(field), f"{self.name(field)}.")

    def text(self, field: str, default: str | None = None) -> str | None:
        value = self.values.get(field)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.bad(field, "a string")
        return value

    def choice(self, field: str, options: Iterable[str], default: str) -> str:
        """One of ``options`` (``default`` when absent or empty)."""
        known = list(options)
        value = self.values.get(field)
        if value is None or value == "":
            return default
        if not isinstance(value, str) or value not in known:
            raise self.bad(field, f"one of {known}")
        return value

    def flag(self, field: str) -> bool:
        value = self.values.get(field)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.bad(field, "true or false")
        return value

    def strings(self, field: str) -> list[str] | None:
        value = self.values.get(field)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.bad(field, "a list of strings")
        return value


def _integer(value: Any, low: int, high: int | None, bad: Any) -> int:
    must = f"an integer from {low}" + (f" to {high}" if high is not None else " up")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(must)
    if value < low or (high is not None and value > high):
        raise bad(must)
    return value


def query_int(
    request: Request, field: str, default: int, low: int = 0, high: int | None = None
) -> int:
    """The query parameter ``field`` as an integer from ``low`` to ``high``, else 422."""
    given = request.query_params.get(field)
    if given is None or given == "":
        return default

    def bad(must: str) -> HTTPProblem:
        return HTTPProblem(422, f"query parameter {field} must be {must}, got {given!r}")

    try:
        value = int(given)
    except ValueError:
        raise bad(
            f"an integer from {low}" + (f" to {high}" if high is not None else " up")
        ) from None
    return _integer(value, low, high, bad)


def run_config_fields(body: Fields) -> None:
    """Check the fields a run or a state edit reads its config from (``config``,
    ``config.configurable``, ``config.recursion_limit``, ``context``, ``checkpoint``,
    ``checkpoint_id``), so that what reads them next meets only the right types."""
    config = body.nested("config")
    config.obj("configurable")
    config.integer("recursion_limit", 1, low=1)
    body.obj("context")
    checkpoint = body.nested("checkpoint")
    checkpoint.text("checkpoint_id")
    checkpoint.text("checkpoint_ns")
    body.text("checkpoint_id")


# What a run request may ask for that this server does not do: refused, not ignored.
_UNSUPPORTED = {
    "interrupt_before": "compile the graph with interrupt_before=[...] (per run they are not served)",
    "interrupt_after": "compile the graph with interrupt_after=[...] (per run they are not served)",
    "webhook": "follow the run with join or its stream instead",
    "after_seconds": "runs start at once; start it later from the client",
}


def refuse_unsupported(body: Mapping[str, Any]) -> None:
    """A 422 for what a run request asks that this server does not do (not ignored)."""
    for key, instead in _UNSUPPORTED.items():
        if body.get(key):
            raise HTTPProblem(422, f"{key} is not supported by this server: {instead}")
