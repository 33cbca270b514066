"""Tools made from Python functions: ``@tool``, ``ToolParam`` and ``FunctionToolCallback``."""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import types
from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from .._runtime.run_loop import run_coroutine_sync
from .._runtime.workers import FinishedAfterCancel, in_thread
from ..errors import GraphUsageError, ToolExecutionException
from ._schema import ToolInput, ToolParam, check_tool_name, describe, return_type_of
from .context import ToolContext
from .convert import ResultConverterLike, ToolCallResultConverter, as_result_converter
from .definition import ToolDefinition, ToolMetadata

__all__ = [
    "FunctionToolCallback",
    "FunctionToolCallbackBuilder",
    "MethodToolCallback",
    "ToolParam",
    "tool",
]

P = ParamSpec("P")
P2 = ParamSpec("P2")
R = TypeVar("R")


class _Binding(enum.Enum):
    NONE = "function"  # a plain function (or a staticmethod)
    INSTANCE = "instance"  # first parameter self: bound to an instance
    CLASS = "class"  # a classmethod: bound to a class


_UNBOUND: Any = object()


@dataclasses.dataclass(frozen=True, slots=True)
class _ToolSpec:
    """Everything about a tool except the object a method tool is bound to."""

    fn: Callable[..., Any]
    binding: _Binding
    definition: ToolDefinition
    metadata: ToolMetadata
    converter: ToolCallResultConverter
    tool_input: ToolInput
    return_type: Any
    is_async: bool


class FunctionToolCallback(Generic[P, R]):
    """A ``ToolCallback`` running a Python function; ``@tool`` and ``builder`` make one.

    It stays callable as the plain function (``get_weather("Paris")``); a ``@tool`` method
    accessed on an instance (``calc.add``) is a ``MethodToolCallback`` bound to it.

    ``call(tool_input, tool_context=None)`` parses the model's JSON arguments (empty or blank
    means no arguments), validates them with pydantic in lax mode (``"3"`` is accepted for an
    ``int``; unknown keys are ignored), injects ``tool_context`` (an empty ``ToolContext`` when
    none is given) into ``ToolContext`` parameters, runs the function and converts its result
    to text. Invalid JSON or invalid arguments raise ``ToolArgumentsError``; an exception in the function or an unconvertible
    result raise ``ToolExecutionException`` (the original exception as ``__cause__``; one the
    function raises itself passes unchanged). Exceptions that are not ``Exception``
    (``KeyboardInterrupt``, cancellation) propagate untouched.

    ``call`` runs an async function to completion: inside a sync graph or agent run on that
    run's one event loop, elsewhere with ``asyncio.run`` (on a worker thread when the calling
    thread already runs an event loop, which then waits); ``acall`` awaits it, and runs a
    sync function in a worker thread (as ``asyncio.to_thread`` would) so the loop is never
    blocked.
    """

    __name__: str
    __qualname__: str
    _spec: _ToolSpec
    _bound: Any

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        input_type: type[Any] | None = None,
        input_schema: str | None = None,
        tool_metadata: ToolMetadata | None = None,
        result_converter: ResultConverterLike | None = None,
    ) -> None:
        self._adopt(
            _make_spec(
                fn,
                name=name,
                description=description,
                input_type=input_type,
                input_schema=input_schema,
                metadata=tool_metadata or ToolMetadata(),
                result_converter=result_converter,
            ),
            _UNBOUND,
        )

    @staticmethod
    def builder(name: str, fn: Callable[P2, R]) -> FunctionToolCallbackBuilder[P2, R]:
        """A builder for a tool named ``name`` running ``fn``."""
        return FunctionToolCallbackBuilder(name, fn)

    def _adopt(self, spec: _ToolSpec, bound: Any) -> None:
        self._spec = spec
        self._bound = bound
        fn = spec.fn
        self.__wrapped__: Any = fn if bound is _UNBOUND else types.MethodType(fn, bound)
        for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
            value = getattr(fn, attribute, None)
            if value is not None:
                setattr(self, attribute, value)

    @property
    def tool_definition(self) -> ToolDefinition:
        return self._spec.definition

    @property
    def tool_metadata(self) -> ToolMetadata:
        return self._spec.metadata

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the function itself, as if it were not a tool."""
        if self._bound is _UNBOUND:
            result: R = self._spec.fn(*args, **kwargs)
        else:
            result = self._spec.fn(self._bound, *args, **kwargs)
        return result

    @overload
    def __get__(
        self, obj: None, objtype: type[Any] | None = None
    ) -> FunctionToolCallback[P, R]: ...

    @overload
    def __get__(
        self: FunctionToolCallback[Concatenate[Any, P2], R],
        obj: object,
        objtype: type[Any] | None = None,
    ) -> MethodToolCallback[P2, R]: ...

    def __get__(self, obj: object | None, objtype: type[Any] | None = None) -> Any:
        """A ``@tool`` method read from an instance is a ``MethodToolCallback`` bound to it."""
        binding = self._spec.binding
        if self._bound is not _UNBOUND or binding is _Binding.NONE:
            return self
        if binding is _Binding.CLASS:
            return MethodToolCallback(objtype if objtype is not None else type(obj), self)
        return self if obj is None else MethodToolCallback(obj, self)

    def call(self, tool_input: str, tool_context: ToolContext | None = None) -> str:
        """Run the tool on the model's JSON arguments; the result as text."""
        spec = self._spec
        args, kwargs = self._prepare(tool_input, tool_context)
        try:
            if spec.is_async:
                result = _run_coroutine(self._invoke(args, kwargs))
            else:
                result = self._invoke(args, kwargs)
        except ToolExecutionException:
            raise
        except Exception as exc:
            raise self._failed(exc) from exc
        return self._convert(result)

    async def acall(self, tool_input: str, tool_context: ToolContext | None = None) -> str:
        """``call`` for async code: never blocks the running loop."""
        args, kwargs = self._prepare(tool_input, tool_context)
        try:
            if self._spec.is_async:
                result = await self._invoke(args, kwargs)
            else:
                result = await in_thread(self._invoke, args, kwargs)
        except ToolExecutionException:
            raise
        except FinishedAfterCancel as stop:  # keep the finished thread's answer (_runtime.workers)
            if stop.error is None:
                raise FinishedAfterCancel(text=self._convert(stop.result)) from None
            failed = (
                stop.error if not isinstance(stop.error, Exception) else self._failed(stop.error)
            )
            raise FinishedAfterCancel(error=failed) from None
        except Exception as exc:
            raise self._failed(exc) from exc
        return self._convert(result)

    def _prepare(
        self, tool_input: str, tool_context: ToolContext | None
    ) -> tuple[list[Any], dict[str, Any]]:
        spec = self._spec
        if spec.binding is _Binding.INSTANCE and self._bound is _UNBOUND:
            raise GraphUsageError(
                f"tool '{spec.definition.name}' is a method ({spec.fn.__qualname__}) and is not "
                "bound to an object: use ToolCallbacks.from_object(obj) or pass obj."
                f"{spec.fn.__name__}"
            )
        arguments = spec.tool_input.parse(tool_input)
        context = tool_context if tool_context is not None else ToolContext()
        return spec.tool_input.bind(arguments, context)

    def _invoke(self, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if self._bound is _UNBOUND:
            return self._spec.fn(*args, **kwargs)
        return self._spec.fn(self._bound, *args, **kwargs)

    def _failed(self, error: Exception) -> ToolExecutionException:
        name = self._spec.definition.name
        return ToolExecutionException(
            f"tool '{name}' failed: {type(error).__name__}: {error}", tool_name=name
        )

    def _convert(self, result: Any) -> str:
        spec = self._spec
        name = spec.definition.name
        try:
            text = spec.converter.convert(result, spec.return_type)
        except Exception as exc:
            raise ToolExecutionException(
                f"tool '{name}' returned a {type(result).__qualname__} that could not be "
                f"converted to text ({exc}); return a str or a JSON-serializable value (dict, "
                "list, pydantic model, dataclass), or give the tool a result_converter",
                tool_name=name,
            ) from exc
        if not isinstance(text, str):
            raise ToolExecutionException(
                f"the result_converter of tool '{name}' returned a {type(text).__qualname__}, "
                "not a str",
                tool_name=name,
            )
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._spec.definition.name!r})"


class FunctionToolCallbackBuilder(Generic[P, R]):
    """Builds a ``FunctionToolCallback``: ``FunctionToolCallback.builder("weather", fn)
    .description("...").input_type(WeatherRequest).build()``.

    Without ``description`` the docstring of ``fn`` is used, then the name. With
    ``input_type`` (a pydantic model or dataclass) the schema is that type's and ``fn``
    receives the validated instance; without it the schema comes from ``fn``'s parameters.
    ``input_schema`` replaces the schema shown to the model (validation is unchanged).
    """

    def __init__(self, name: str, fn: Callable[P, R]) -> None:
        self._name = name
        self._fn = fn
        self._description: str | None = None
        self._input_type: type[Any] | None = None
        self._input_schema: str | None = None
        self._metadata = ToolMetadata()
        self._converter: ResultConverterLike | None = None

    def description(self, description: str) -> FunctionToolCallbackBuilder[P, R]:
        self._description = description
        return self

    def input_type(self, input_type: type[Any]) -> FunctionToolCallbackBuilder[P, R]:
        self._input_type = input_type
        return self

    def input_schema(self, input_schema: str) -> FunctionToolCallbackBuilder[P, R]:
        self._input_schema = input_schema
        return self

    def tool_metadata(self, tool_metadata: ToolMetadata) -> FunctionToolCallbackBuilder[P, R]:
        self._metadata = tool_metadata
        return self

    def result_converter(self, converter: ResultConverterLike) -> FunctionToolCallbackBuilder[P, R]:
        self._converter = converter
        return self

    def build(self) -> FunctionToolCallback[P, R]:
        """The tool; raises ``TypeError``/``ValueError`` when the name, function or types
        cannot make one."""
        return FunctionToolCallback(
            self._fn,
            name=self._name,
            description=self._description,
            input_type=self._input_type,
            input_schema=self._input_schema,
            tool_metadata=self._metadata,
            result_converter=self._converter,
        )


@overload
def tool(fn: Callable[P, R], /) -> FunctionToolCallback[P, R]: ...


@overload
def tool(fn: staticmethod[P, R] | classmethod[Any, P, R], /) -> FunctionToolCallback[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
    result_converter: ResultConverterLike | None = None,
) -> Callable[[Callable[P, R]], FunctionToolCallback[P, R]]: ...


def tool(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    return_direct: bool = False,
    result_converter: ResultConverterLike | None = None,
) -> Any:
    """Make a function or method a tool: ``@tool`` or ``@tool(name=..., description=...,
    return_direct=..., result_converter=...)``.

    The name defaults to the function's name and the description to the first paragraph of
    its docstring, then to the name. Parameters become the JSON schema (``self``/``cls`` and
    ``ToolContext`` parameters excluded); a type the model cannot send is a ``TypeError`` now,
    not at the first call. On a method, ``ToolCallbacks.from_object(obj)`` (or ``obj.method``)
    gives the tool bound to ``obj``; put ``@tool`` above ``@staticmethod``/``@classmethod``.
    """

    def decorate(function: Any) -> FunctionToolCallback[Any, Any]:
        return FunctionToolCallback(
            function,
            name=name,
            description=description,
            tool_metadata=ToolMetadata(return_direct=return_direct),
            result_converter=result_converter,
        )

    if fn is None:
        return decorate
    return decorate(fn)


def _make_spec(
    fn: Any,
    *,
    name: str | None,
    description: str | None,
    input_type: type[Any] | None,
    input_schema: str | None,
    metadata: ToolMetadata,
    result_converter: ResultConverterLike | None,
) -> _ToolSpec:
    binding = _Binding.NONE
    if isinstance(fn, FunctionToolCallback):
        raise TypeError(f"{fn!r} is already a tool")
    if isinstance(fn, staticmethod):
        fn = fn.__func__
    elif isinstance(fn, classmethod):
        fn, binding = fn.__func__, _Binding.CLASS
    elif inspect.isfunction(fn):
        params = list(inspect.signature(fn).parameters)
        if params and params[0] in ("self", "cls"):
            binding = _Binding.INSTANCE
    if not callable(fn):
        raise TypeError(f"a tool needs a function, got {fn!r}")
    where = getattr(fn, "__qualname__", repr(fn))
    tool_name = check_tool_name(
        name if name is not None else getattr(fn, "__name__", ""), where=where
    )
    skip_first = binding is not _Binding.NONE
    if input_type is not None:
        tool_input = ToolInput.from_input_type(
            fn, input_type, tool_name=tool_name, skip_first=skip_first
        )
    else:
        tool_input = ToolInput.from_signature(fn, tool_name=tool_name, skip_first=skip_first)
    schema = tool_input.schema_json if input_schema is None else _checked_schema(input_schema)
    text = description if description is not None else describe(fn)
    return _ToolSpec(
        fn=fn,
        binding=binding,
        definition=ToolDefinition(tool_name, text or tool_name, schema),
        metadata=metadata,
        converter=as_result_converter(result_converter),
        tool_input=tool_input,
        return_type=return_type_of(fn),
        is_async=_is_async(fn),
    )


def _checked_schema(input_schema: str) -> str:
    try:
        parsed = json.loads(input_schema)
    except json.JSONDecodeError as exc:
        raise ValueError(f"input_schema is not valid JSON: {exc}") from exc
    if not isinstance(parsed, dict):
        raise ValueError("input_schema must be a JSON object (a JSON schema)")
    return input_schema


def _is_async(fn: Callable[..., Any]) -> bool:
    method = getattr(fn, "__call__", None)  # noqa: B004 - a callable object's method
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(method)


def _run_coroutine(coroutine: Any) -> Any:
    """Run an async tool to completion from sync code: on the sync run's event loop (one
    per run, so what the tool caches, like an ``httpx.AsyncClient``, works on every call),
    or outside a run with ``asyncio.run``."""
    return run_coroutine_sync(coroutine)


class MethodToolCallback(FunctionToolCallback[P, R]):
    """A ``@tool`` method bound to ``tool_object``: the same tool (name, schema, metadata,
    converter) with ``self`` supplied by the object. Callable as the bound method.

    ``tool_method`` is the ``@tool``-decorated method (as read from the class), or a plain
    function of the class, which is then made a tool with the defaults of ``@tool``. For a
    ``@tool`` classmethod, ``tool_object`` is the class. Two callbacks are equal when they wrap
    the same method of the same object, like bound methods.
    """

    def __init__(
        self, tool_object: object, tool_method: FunctionToolCallback[Any, Any] | Callable[..., Any]
    ) -> None:
        unbound = (
            tool_method
            if isinstance(tool_method, FunctionToolCallback)
            else FunctionToolCallback(tool_method)
        )
        if unbound._bound is not _UNBOUND:
            raise TypeError(f"{unbound!r} is already bound to an object")
        if unbound._spec.binding is _Binding.NONE:
            raise TypeError(
                f"tool '{unbound.tool_definition.name}' is not a method (its first parameter "
                "is not self, and it is no classmethod): use it as a FunctionToolCallback"
            )
        self._adopt(unbound._spec, tool_object)

    @property
    def tool_object(self) -> object:
        """The object (or, for a classmethod, the class) the method is bound to."""
        return self._bound

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MethodToolCallback):
            return NotImplemented
        return self._bound is other._bound and self._spec is other._spec

    def __hash__(self) -> int:
        return hash((id(self._bound), id(self._spec)))

    def __repr__(self) -> str:
        owner = type(self._bound).__qualname__
        if isinstance(self._bound, type):
            owner = self._bound.__qualname__
        return f"MethodToolCallback(name={self.tool_definition.name!r}, object={owner})"
