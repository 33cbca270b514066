"""The JSON schema a model sees for a tool, built from the function's type hints."""

from __future__ import annotations

import dataclasses
import enum
import socket
from collections.abc import Callable
from typing import Annotated, Any, Literal, Optional

import pytest
from pydantic import BaseModel, Field

from graph_agent.tools.context import ToolContext
from graph_agent.tools.function import FunctionToolCallback, ToolParam, tool


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Address(BaseModel):
    """A postal address."""

    street: str = Field(description="street and number")
    title: str = "home"  # a property named "title" must survive the title cleanup


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class WeatherRequest(BaseModel):
    """Weather for one place."""

    location: str = Field(description="City and country")
    unit: Unit = Unit.CELSIUS


def schema_of(fn: Callable[..., Any]) -> dict[str, Any]:
    return tool(fn).tool_definition.schema


def prop(fn: Callable[..., Any], name: str = "x") -> dict[str, Any]:
    properties: dict[str, Any] = schema_of(fn)["properties"]
    return dict(properties[name])


def test_scalar_types_map_to_json_types() -> None:
    def f(s: str, i: int, n: float, b: bool) -> None: ...

    schema = schema_of(f)
    assert schema["type"] == "object"
    assert {k: v["type"] for k, v in schema["properties"].items()} == {
        "s": "string",
        "i": "integer",
        "n": "number",
        "b": "boolean",
    }
    assert schema["required"] == ["s", "i", "n", "b"]


def test_enum_schema_lists_values() -> None:
    def f(x: Unit) -> None: ...

    schema = schema_of(f)
    ref = schema["properties"]["x"]["$ref"]
    assert ref == "#/$defs/Unit"
    assert schema["$defs"]["Unit"] == {"enum": ["celsius", "fahrenheit"], "type": "string"}


def test_literal_schema_is_an_enum() -> None:
    def f(x: Literal["asc", "desc"]) -> None: ...

    assert prop(f) == {"enum": ["asc", "desc"], "type": "string"}


def test_list_and_dict_schemas() -> None:
    def f(tags: list[str], scores: dict[str, int]) -> None: ...

    schema = schema_of(f)
    assert schema["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert schema["properties"]["scores"] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }


def test_optional_is_nullable_and_not_required() -> None:
    def f(a: int | None, b: Optional[str]) -> None: ...  # noqa: UP045 - both spellings

    schema = schema_of(f)
    assert "required" not in schema
    assert schema["properties"]["a"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert schema["properties"]["b"]["anyOf"] == [{"type": "string"}, {"type": "null"}]


def test_nested_pydantic_model_and_dataclass_go_to_defs() -> None:
    def f(address: Address, points: list[Point]) -> None: ...

    schema = schema_of(f)
    assert schema["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert schema["properties"]["points"]["items"] == {"$ref": "#/$defs/Point"}
    assert schema["$defs"]["Address"] == {
        "description": "A postal address.",
        "type": "object",
        "properties": {
            "street": {"description": "street and number", "type": "string"},
            "title": {"default": "home", "type": "string"},
        },
        "required": ["street"],
    }
    assert schema["$defs"]["Point"]["required"] == ["x"]


def test_no_pydantic_titles_anywhere() -> None:
    def f(address: Address, unit: Unit, n: int) -> None: ...

    text = tool(f).tool_definition.input_schema
    assert '"title": "' not in text.replace('"title": {', "")


def test_defaults_make_a_parameter_optional_and_are_shown() -> None:
    def f(city: str, days: int = 3, unit: Unit = Unit.CELSIUS) -> None: ...

    schema = schema_of(f)
    assert schema["required"] == ["city"]
    assert schema["properties"]["days"]["default"] == 3
    assert schema["properties"]["unit"]["default"] == "celsius"


def test_no_parameters_gives_an_empty_object_schema() -> None:
    def f() -> str:
        return "x"

    assert schema_of(f) == {"type": "object", "properties": {}}


def test_tool_param_description() -> None:
    def f(x: Annotated[str, ToolParam(description="a city name")]) -> None: ...

    assert prop(f) == {"description": "a city name", "type": "string"}


def test_pydantic_field_in_annotated_and_as_default() -> None:
    def f(
        a: Annotated[int, Field(description="first", ge=0)],
        b: int = Field(default=2, description="second"),
    ) -> None: ...

    schema = schema_of(f)
    assert schema["properties"]["a"] == {"description": "first", "minimum": 0, "type": "integer"}
    assert schema["properties"]["b"] == {"default": 2, "description": "second", "type": "integer"}
    assert schema["required"] == ["a"]


def test_tool_param_required_overrides_default_and_optional() -> None:
    def f(
        a: Annotated[int, ToolParam(required=True)] = 1,
        b: Annotated[int | None, ToolParam(required=True)] = None,
        *,
        c: Annotated[str, ToolParam(required=False)],
        d: Annotated[str, ToolParam(required=False)] = Field(description="d"),
    ) -> str:
        return f"{a} {b} {c} {d}"

    callback = tool(f)
    assert callback.tool_definition.schema["required"] == ["a", "b"]
    # a parameter made optional without a default receives None when the model omits it
    assert callback.call('{"a": 5, "b": null}') == "5 None None None"


def test_tool_context_parameters_are_not_in_the_schema() -> None:
    def f(city: str, ctx: ToolContext, other: ToolContext | None = None) -> None: ...

    schema = schema_of(f)
    assert list(schema["properties"]) == ["city"]
    assert schema["required"] == ["city"]


def test_self_is_not_in_the_schema_of_a_method() -> None:
    class Box:
        @tool
        def put(self, item: str) -> None: ...

    assert Box.put.tool_definition.schema["properties"] == {"item": {"type": "string"}}


def test_parameter_named_like_a_pydantic_attribute_keeps_its_name() -> None:
    def f(schema: str, model_config: int, _private: bool = False) -> str:
        return f"{schema}-{model_config}-{_private}"

    callback = tool(f)
    assert list(callback.tool_definition.schema["properties"]) == [
        "schema",
        "model_config",
        "_private",
    ]
    assert callback.call('{"schema": "s", "model_config": 2, "_private": true}') == "s-2-True"


def test_any_and_unannotated_parameters_accept_any_json() -> None:
    def f(a: Any, b) -> None: ...

    schema = schema_of(f)
    assert schema["properties"] == {"a": {}, "b": {}}
    assert schema["required"] == ["a", "b"]


def test_unsupported_type_is_a_type_error_naming_function_and_parameter() -> None:
    def connect(host: str, sock: socket.socket) -> None: ...

    with pytest.raises(TypeError) as info:
        tool(connect)
    message = str(info.value)
    assert "connect" in message
    assert "'sock'" in message


def test_type_without_json_schema_is_a_type_error() -> None:
    def apply(fn: Callable[[int], int]) -> None: ...

    with pytest.raises(TypeError, match="'fn'"):
        tool(apply)


def test_unresolvable_type_hint_is_a_type_error_naming_the_name() -> None:
    def f(x: NotDefinedAnywhere) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(TypeError, match="NotDefinedAnywhere"):
        tool(f)


def test_default_json_cannot_show_is_left_out_of_the_schema() -> None:
    marker = object()

    def f(x: Any = marker) -> bool:
        return x is marker

    callback = tool(f)
    assert callback.tool_definition.schema["properties"] == {"x": {}}
    assert callback.call("{}") == "true"  # the function's own default is used


def test_var_args_are_rejected() -> None:
    def f(*values: int) -> None: ...

    with pytest.raises(TypeError, match=r"\*values"):
        tool(f)


def test_input_type_model_is_the_whole_schema() -> None:
    def weather(request: WeatherRequest) -> str:
        return request.location

    callback = FunctionToolCallback.builder("weather", weather).input_type(WeatherRequest).build()
    schema = callback.tool_definition.schema
    assert schema["description"] == "Weather for one place."
    assert schema["properties"]["location"] == {
        "description": "City and country",
        "type": "string",
    }
    assert schema["required"] == ["location"]
    assert schema["$defs"]["Unit"]["enum"] == ["celsius", "fahrenheit"]


def test_input_type_that_is_not_an_object_is_rejected() -> None:
    def f(x: int) -> int:
        return x

    with pytest.raises(TypeError, match="JSON object"):
        FunctionToolCallback.builder("f", f).input_type(int).build()


def test_input_type_needs_exactly_one_input_parameter() -> None:
    def f(a: WeatherRequest, b: int) -> None: ...

    with pytest.raises(TypeError, match="exactly one parameter"):
        FunctionToolCallback.builder("f", f).input_type(WeatherRequest).build()


def test_input_schema_override_is_shown_verbatim() -> None:
    def f(x: int) -> int:
        return x

    custom = '{"type": "object", "properties": {"x": {"type": "integer", "minimum": 1}}}'
    callback = FunctionToolCallback.builder("f", f).input_schema(custom).build()
    assert callback.tool_definition.input_schema == custom
    assert callback.call('{"x": 5}') == "5"
