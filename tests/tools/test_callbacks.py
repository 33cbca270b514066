"""Running tools on the model's raw arguments: bad input, failures, results, builders, objects."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import decimal
import enum
import json
import uuid
from typing import Any

import pytest
from pydantic import BaseModel, Field

from graph_agent.errors import ToolExecutionException
from graph_agent.tools.convert import (
    DefaultToolCallResultConverter,
    ToolCallResultConverter,
    as_result_converter,
)
from graph_agent.tools.definition import ToolMetadata
from graph_agent.tools.function import FunctionToolCallback, tool
from graph_agent.tools.method import MethodToolCallback, ToolCallbacks


@tool
def book_flight(origin: str, passengers: int, window_seat: bool = False) -> str:
    """Book a flight."""
    return f"{origin} x{passengers} window={window_seat}"


# -- arguments ---------------------------------------------------------------------------


def test_valid_arguments_call_the_function() -> None:
    assert book_flight.call('{"origin": "CDG", "passengers": 2}') == "CDG x2 window=False"


def test_lax_coercion_of_json_values() -> None:
    # pydantic's lax mode: "2" is an acceptable int, "true" an acceptable bool
    text = book_flight.call('{"origin": "CDG", "passengers": "2", "window_seat": "true"}')
    assert text == "CDG x2 window=True"


def test_unknown_arguments_are_ignored() -> None:
    assert book_flight.call('{"origin": "CDG", "passengers": 1, "meal": "veg"}').startswith("CDG")


@pytest.mark.parametrize("empty", ["", "   ", "\n", "null"])
def test_empty_arguments_mean_no_arguments(empty: str) -> None:
    @tool
    def now() -> str:
        return "12:00"

    assert now.call(empty) == "12:00"


def test_empty_arguments_for_a_tool_with_required_parameters_list_them() -> None:
    with pytest.raises(ToolExecutionException) as info:
        book_flight.call("")
    message = str(info.value)
    assert "origin: Field required" in message
    assert "passengers: Field required" in message


def test_invalid_json_says_so_quotes_the_input_and_asks_for_an_object() -> None:
    with pytest.raises(ToolExecutionException) as info:
        book_flight.call('{"origin": "CDG", passengers: 2')
    error = info.value
    assert error.tool_name == "book_flight"
    assert "not valid JSON" in str(error)
    assert '{"origin": "CDG", passengers: 2' in str(error)
    assert "JSON object" in str(error)
    assert "origin, passengers, window_seat" in str(error)
    assert isinstance(error.__cause__, json.JSONDecodeError)


def test_invalid_json_quote_is_truncated() -> None:
    with pytest.raises(ToolExecutionException) as info:
        book_flight.call("{" + "x" * 5000)
    assert len(str(info.value)) < 600
    assert "..." in str(info.value)


def test_json_that_is_not_an_object_is_rejected() -> None:
    with pytest.raises(ToolExecutionException, match="must be a JSON object, got a JSON array"):
        book_flight.call('["CDG", 2]')


def test_validation_errors_list_every_field_with_its_problem() -> None:
    with pytest.raises(ToolExecutionException) as info:
        book_flight.call('{"passengers": "two", "window_seat": "maybe"}')
    lines = str(info.value).splitlines()
    assert lines[0] == "invalid arguments for tool 'book_flight' (3 errors):"
    assert "  - origin: Field required" in lines
    assert any(line.startswith("  - passengers: Input should be a valid integer") for line in lines)
    assert any(
        line.startswith("  - window_seat: Input should be a valid boolean") for line in lines
    )
    assert '(got "two")' in str(info.value)
    assert info.value.tool_name == "book_flight"


class Passenger(BaseModel):
    name: str
    age: int = Field(ge=0)


def test_validation_errors_in_nested_values_give_their_path() -> None:
    @tool
    def check_in(passengers: list[Passenger]) -> str:
        return "ok"

    with pytest.raises(ToolExecutionException) as info:
        check_in.call('{"passengers": [{"name": "A", "age": 3}, {"name": "B", "age": -1}]}')
    assert "passengers[1].age: Input should be greater than or equal to 0" in str(info.value)


# -- failures ----------------------------------------------------------------------------


def test_a_raising_tool_gives_a_tool_execution_exception_with_the_cause() -> None:
    original = ValueError("no seats left")

    @tool
    def reserve() -> str:
        raise original

    with pytest.raises(ToolExecutionException) as info:
        reserve.call("{}")
    assert str(info.value) == "tool 'reserve' failed: ValueError: no seats left"
    assert info.value.__cause__ is original
    assert info.value.tool_name == "reserve"


def test_a_tool_execution_exception_raised_by_the_tool_passes_unchanged() -> None:
    own = ToolExecutionException("ask the user for a date first", tool_name="plan")

    @tool
    def plan() -> str:
        raise own

    with pytest.raises(ToolExecutionException) as info:
        plan.call("")
    assert info.value is own


@pytest.mark.parametrize("error", [KeyboardInterrupt(), SystemExit(3)])
def test_base_exceptions_propagate_unchanged(error: BaseException) -> None:
    @tool
    def stop() -> str:
        raise error

    with pytest.raises(type(error)) as info:
        stop.call("")
    assert info.value is error
    with pytest.raises(type(error)):
        asyncio.run(stop.acall(""))


def test_cancellation_of_an_async_tool_propagates() -> None:
    @tool
    async def cancelled() -> str:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cancelled.acall(""))


# -- results -----------------------------------------------------------------------------


class Status(enum.Enum):
    OPEN = "open"


class Flight(BaseModel):
    code: str
    departs: datetime.datetime
    status: Status


@dataclasses.dataclass
class Seat:
    row: int
    letter: str


def convert(value: Any) -> str:
    return DefaultToolCallResultConverter().convert(value, None)


def test_default_conversion_keeps_str_and_turns_none_into_success() -> None:
    assert convert("plain text") == "plain text"
    assert convert(None) == "Success"


def test_default_conversion_encodes_json() -> None:
    departs = datetime.datetime(2025, 5, 1, 9, 30)
    flight = Flight(code="AF1", departs=departs, status=Status.OPEN)
    assert json.loads(convert(flight)) == {
        "code": "AF1",
        "departs": "2025-05-01T09:30:00",
        "status": "open",
    }
    assert json.loads(convert(Seat(3, "A"))) == {"row": 3, "letter": "A"}
    assert json.loads(convert({"n": 1, "ok": True, "xs": (1, 2)})) == {
        "n": 1,
        "ok": True,
        "xs": [1, 2],
    }
    assert convert(42) == "42"
    assert convert(Status.OPEN) == '"open"'
    assert sorted(json.loads(convert({3, 1, 2}))) == [1, 2, 3]
    assert convert(decimal.Decimal("1.50")) == '"1.50"'
    token = uuid.UUID(int=1)
    assert convert(token) == f'"{token}"'
    assert convert(b"\x00\xff") == '"AP8="'
    assert convert("café") == "café" and convert(["café"]) == '["café"]'


def test_tool_returning_something_json_cannot_encode_names_tool_and_type() -> None:
    @tool
    def leak() -> object:
        return object()

    with pytest.raises(ToolExecutionException) as info:
        leak.call("")
    message = str(info.value)
    assert "tool 'leak'" in message
    assert "object" in message
    assert "result_converter" in message
    assert isinstance(info.value.__cause__, TypeError)


def test_a_function_result_converter_replaces_the_default() -> None:
    calls: list[tuple[Any, Any]] = []

    def upper(result: Any, return_type: Any) -> str:
        calls.append((result, return_type))
        return str(result).upper()

    @tool(result_converter=upper)
    def greet(name: str) -> str:
        return f"hello {name}"

    assert greet.call('{"name": "ada"}') == "HELLO ADA"
    assert calls == [("hello ada", str)]


def test_an_object_result_converter_replaces_the_default() -> None:
    class Csv:
        def convert(self, result: Any, return_type: Any = None) -> str:
            return ",".join(str(v) for v in result)

    assert isinstance(Csv(), ToolCallResultConverter)

    @tool(result_converter=Csv())
    def numbers() -> list[int]:
        return [1, 2, 3]

    assert numbers.call("") == "1,2,3"


def test_bad_result_converters_are_rejected_or_reported() -> None:
    class Csv:
        def convert(self, result: Any, return_type: Any = None) -> str:
            return ""

    with pytest.raises(TypeError, match=r"Csv\(\)"):
        as_result_converter(Csv)  # type: ignore[arg-type]  # the class, not an instance
    with pytest.raises(TypeError, match="result_converter"):
        as_result_converter(42)  # type: ignore[arg-type]

    @tool(result_converter=lambda result, return_type: 3)  # type: ignore[arg-type]
    def f() -> str:
        return "x"

    with pytest.raises(ToolExecutionException, match="not a str"):
        f.call("")


# -- builder -----------------------------------------------------------------------------


class WeatherRequest(BaseModel):
    location: str = Field(description="City and country")
    days: int = 1


def forecast(request: WeatherRequest) -> dict[str, Any]:
    """Forecast for a location."""
    return {"location": request.location, "days": request.days}


def test_builder_with_input_type_passes_the_model_instance() -> None:
    callback = (
        FunctionToolCallback.builder("forecast", forecast)
        .description("Get the forecast")
        .input_type(WeatherRequest)
        .tool_metadata(ToolMetadata(return_direct=True))
        .build()
    )
    assert callback.tool_definition.name == "forecast"
    assert callback.tool_definition.description == "Get the forecast"
    assert callback.tool_metadata.return_direct is True
    assert json.loads(callback.call('{"location": "Paris", "days": 3}')) == {
        "location": "Paris",
        "days": 3,
    }
    with pytest.raises(ToolExecutionException, match="location: Field required"):
        callback.call('{"days": 3}')


def test_builder_defaults_description_to_docstring_and_schema_to_parameters() -> None:
    def area(width: float, height: float) -> float:
        return width * height

    callback = FunctionToolCallback.builder("area", area).build()
    assert callback.tool_definition.description == "area"
    assert callback.tool_definition.schema["required"] == ["width", "height"]
    assert callback.call('{"width": 2, "height": 3.5}') == "7.0"
    built = FunctionToolCallback.builder("forecast", forecast).input_type(WeatherRequest).build()
    assert built.tool_definition.description == "Forecast for a location."


def test_builder_with_result_converter_and_a_bound_method() -> None:
    class Greeter:
        def __init__(self, greeting: str) -> None:
            self.greeting = greeting

        def greet(self, name: str) -> str:
            return f"{self.greeting}, {name}"

    callback = (
        FunctionToolCallback.builder("greet", Greeter("Hi").greet)
        .result_converter(lambda result, _: f"<{result}>")
        .build()
    )
    assert callback.tool_definition.schema["properties"] == {"name": {"type": "string"}}
    assert callback.call('{"name": "Ada"}') == "<Hi, Ada>"


# -- objects -----------------------------------------------------------------------------


class Calculator:
    def __init__(self) -> None:
        self.calls = 0

    @tool(description="Add two numbers")
    def add(self, a: float, b: float) -> float:
        self.calls += 1
        return a + b

    def helper(self) -> None: ...

    @tool(description="Multiply two numbers")
    def multiply(self, a: float, b: float) -> float:
        self.calls += 1
        return a * b


class ScientificCalculator(Calculator):
    @tool(description="Add, rounding")
    def add(self, a: float, b: float) -> float:
        return round(a + b)

    @tool
    def power(self, base: float, exponent: float) -> float:
        """Raise base to exponent."""
        return float(base**exponent)


class Clock:
    @tool
    def now(self) -> str:
        return "12:00"


class OtherCalculator:
    @tool(name="add")
    def plus(self, a: int, b: int) -> int:
        return a + b


def test_from_object_binds_tool_methods_in_definition_order() -> None:
    calculator = Calculator()
    callbacks = ToolCallbacks.from_object(calculator)
    assert [c.tool_definition.name for c in callbacks] == ["add", "multiply"]
    assert all(isinstance(c, MethodToolCallback) for c in callbacks)
    assert callbacks[1].call('{"a": 6, "b": 7}') == "42.0"
    assert calculator.calls == 1
    assert calculator.add(1, 2) == 3  # still a plain method
    assert calculator.calls == 2


def test_from_object_with_inheritance_keeps_base_order_and_overrides() -> None:
    callbacks = ToolCallbacks.from_object(ScientificCalculator())
    assert [c.tool_definition.name for c in callbacks] == ["add", "multiply", "power"]
    assert callbacks[0].tool_definition.description == "Add, rounding"
    assert callbacks[0].call('{"a": 1.4, "b": 1.4}') == "3"


def test_from_object_with_several_objects() -> None:
    callbacks = ToolCallbacks.from_object(Calculator(), Clock())
    assert [c.tool_definition.name for c in callbacks] == ["add", "multiply", "now"]


def test_from_object_duplicate_names_are_a_value_error_naming_both() -> None:
    with pytest.raises(ValueError) as info:
        ToolCallbacks.from_object(Calculator(), OtherCalculator())
    message = str(info.value)
    assert "'add'" in message
    assert "Calculator object.add" in message and "OtherCalculator object.plus" in message


def test_from_object_without_tools_is_a_value_error() -> None:
    class Plain:
        def method(self) -> None: ...

    with pytest.raises(ValueError, match="Plain object has no @tool methods"):
        ToolCallbacks.from_object(Plain())


def test_from_object_needs_an_instance() -> None:
    with pytest.raises(TypeError, match="instance"):
        ToolCallbacks.from_object(Calculator)


def test_method_tool_callback_from_a_plain_method() -> None:
    class Thermostat:
        def __init__(self) -> None:
            self.target = 20

        def set_target(self, degrees: int) -> str:
            """Set the target temperature."""
            self.target = degrees
            return "ok"

    thermostat = Thermostat()
    callback: MethodToolCallback[Any, Any] = MethodToolCallback(thermostat, Thermostat.set_target)
    assert callback.tool_definition.description == "Set the target temperature."
    assert callback.call('{"degrees": 23}') == "ok"
    assert thermostat.target == 23
    assert callback.tool_object is thermostat
