"""A weather tool with a pydantic input, built with ``FunctionToolCallback.builder``.

The input model documents each field for the LLM (``location``, ``unit`` as an enum,
``include_forecast``); invalid arguments go back to the model as a list of errors.

    python examples/weather_tool.py [--live]
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence

from _models import choose, parse_args, served
from pydantic import BaseModel, Field

from graph_agent import ChatClient, FunctionToolCallback, ReactAgent
from graph_agent.messages import AssistantMessage, ToolCall
from graph_agent.models import ScriptedChatModel


class Unit(str, enum.Enum):
    C = "C"
    F = "F"


class WeatherRequest(BaseModel):
    location: str = Field(description="City and country, e.g. 'Paris, FR'")
    unit: Unit = Field(default=Unit.C, description="Temperature unit")
    include_forecast: bool = Field(default=False, description="Add tomorrow's forecast")


class WeatherReport(BaseModel):
    location: str
    temperature: float
    unit: Unit
    forecast: str | None = None


def current_weather(request: WeatherRequest) -> WeatherReport:
    celsius = 18.0 if "paris" in request.location.lower() else 11.0
    temperature = celsius if request.unit is Unit.C else celsius * 9 / 5 + 32
    forecast = "light rain" if request.include_forecast else None
    return WeatherReport(
        location=request.location, temperature=temperature, unit=request.unit, forecast=forecast
    )


weather_tool = (
    FunctionToolCallback.builder("current_weather", current_weather)
    .description("Get the current weather for a location")
    .input_type(WeatherRequest)
    .build()
)


def offline_model() -> ScriptedChatModel:
    arguments = json.dumps({"location": "Paris, FR", "unit": "F", "include_forecast": True})
    return ScriptedChatModel(
        [
            AssistantMessage(
                "", tool_calls=[ToolCall(id="call_1", name="current_weather", arguments=arguments)]
            ),
            "It is 64.4°F in Paris; light rain tomorrow.",
        ]
    )


# served: `graph-agent serve examples/weather_tool.py:agent` (its model: see _models.py)
agent = ReactAgent(name="weather", model=served(offline_model), tools=[weather_tool])


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args("A weather tool with a pydantic input.", argv)
    print("schema the model sees:", weather_tool.tool_definition.input_schema)
    reply = (
        ChatClient.create(choose(args, offline_model()))
        .prompt("What's the weather in Paris, in Fahrenheit, and tomorrow?")
        .tools(weather_tool)
        .call()
    )
    for record in reply.tool_records:
        print(f"tool {record.name}({record.arguments}) -> {record.result}")
    print(f"assistant: {reply.content()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
